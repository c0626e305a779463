package clustertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the sentinels monitor the master under.
const MasterName = "drover"

// Sentinel is a local Sentinel set-up: one master, one replica and three
// sentinels (quorum 2) monitoring them.
type Sentinel struct {
	// Data are the master and the replica, in start order: Data[0] starts
	// as the master. Roles change with failovers: ask MasterAddr.
	Data []*Node
	// Sentinels are the three sentinels.
	Sentinels []*Node

	stopOnce sync.Once
}

// StartSentinel starts the master, its replica and three sentinels
// (redis-server --sentinel), and waits until the replica is in sync and
// every sentinel knows the replica and the two other sentinels. The caller
// owns the set-up and must Stop it.
func StartSentinel(ctx context.Context) (*Sentinel, error) {
	server, err := lookPath("redis-server")
	if err != nil {
		return nil, err
	}
	s := &Sentinel{}
	dataArgs := func(extra ...string) func(int, string) []string {
		return func(int, string) []string {
			return append([]string{"--save", "", "--appendonly", "no",
				"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}, extra...)
		}
	}
	master, err := startNode(server, false, nil, dataArgs())
	if err != nil {
		return nil, err
	}
	s.Data = append(s.Data, master)
	replica, err := startNode(server, false, nil, dataArgs("--replicaof", "127.0.0.1", fmt.Sprint(master.Port)))
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.Data = append(s.Data, replica)
	for range 3 {
		sn, err := startNode(server, false, func(port int, dir string) string {
			return fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
				"sentinel monitor %s 127.0.0.1 %d 2\n"+
				"sentinel down-after-milliseconds %s 2000\n"+
				"sentinel failover-timeout %s 10000\n"+
				"sentinel parallel-syncs %s 1\n",
				port, dir, MasterName, master.Port, MasterName, MasterName, MasterName)
		}, func(int, string) []string { return []string{"--sentinel"} })
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.Sentinels = append(s.Sentinels, sn)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := s.waitSettled(wctx, master.Addr); err != nil {
		logs := s.logs()
		s.Stop()
		return nil, fmt.Errorf("%w\n%s", err, logs)
	}
	return s, nil
}

func (s *Sentinel) logs() string {
	var b strings.Builder
	for _, n := range append(append([]*Node(nil), s.Data...), s.Sentinels...) {
		fmt.Fprintf(&b, "--- %s\n%s\n", n.Addr, n.Log())
	}
	return b.String()
}

// Stop kills every process and removes their directories. It is idempotent.
func (s *Sentinel) Stop() {
	s.stopOnce.Do(func() {
		for _, n := range append(append([]*Node(nil), s.Sentinels...), s.Data...) {
			n.Stop()
		}
	})
}

// SentinelAddrs are the sentinels' addresses.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		out[i] = n.Addr
	}
	return out
}

// NewFailoverClient returns a go-redis failover client that finds the master
// through the sentinels; opts may be nil. The caller closes it.
func (s *Sentinel) NewFailoverClient(opts *redis.FailoverOptions) *redis.Client {
	var o redis.FailoverOptions
	if opts != nil {
		o = *opts
	}
	o.MasterName = MasterName
	o.SentinelAddrs = s.SentinelAddrs()
	return redis.NewFailoverClient(&o)
}

func (s *Sentinel) node(addr string) *Node {
	for _, n := range s.Data {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// WaitReplicated waits until the replica has acknowledged all the writes the
// master took before the call.
func (s *Sentinel) WaitReplicated(ctx context.Context) error {
	addr, err := s.MasterAddr(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return waitReplicated(ctx, s.node(addr), len(s.Data)-1)
}

// MasterAddr asks the first sentinel who the master is.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0].Addr})
	defer func() { _ = sc.Close() }()
	hp, err := sc.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", err
	}
	return hp[0] + ":" + hp[1], nil
}

// waitSettled waits until every sentinel names master as the master and
// knows one replica and two other sentinels, and the replica's link to the
// master is up.
func (s *Sentinel) waitSettled(ctx context.Context, master string) error {
	return poll(ctx, 100*time.Millisecond, "wait for the sentinels to settle", func(ctx context.Context) (bool, string, error) {
		for _, sn := range s.Sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr})
			m, err := sc.Master(ctx, MasterName).Result()
			_ = sc.Close()
			if err != nil {
				return notYet(sn.Addr+": ", err)
			}
			addr := m["ip"] + ":" + m["port"]
			if addr != master || m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" || strings.Contains(m["flags"], "down") {
				return false, fmt.Sprintf("%s: master=%s flags=%s num-slaves=%s num-other-sentinels=%s",
					sn.Addr, addr, m["flags"], m["num-slaves"], m["num-other-sentinels"]), nil
			}
		}
		for _, n := range s.Data {
			if n.Addr == master {
				continue
			}
			rdb := n.Client()
			repl, err := info(ctx, rdb, "replication")
			_ = rdb.Close()
			if err != nil {
				return notYet(n.Addr+": ", err)
			}
			if repl["role"] != "slave" || repl["master_link_status"] != "up" || repl["master_port"] != strings.TrimPrefix(master, "127.0.0.1:") {
				return false, fmt.Sprintf("%s: role=%s master_port=%s link=%s", n.Addr, repl["role"], repl["master_port"], repl["master_link_status"]), nil
			}
		}
		return true, "", nil
	})
}

// Failover makes a sentinel fail the master over (SENTINEL FAILOVER: the
// replica is promoted without the master's agreement, and the old master is
// reconfigured as its replica later, see WaitSettled), and waits until the
// sentinels name the new master and it acts as one. It returns the new
// master's address.
func (s *Sentinel) Failover(ctx context.Context) (string, error) {
	old, err := s.MasterAddr(ctx)
	if err != nil {
		return "", err
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	// A forced failover the sentinel aborts (the promotion not seen within
	// failover-timeout, 10 s, which a loaded machine can miss) is not
	// retried by the sentinel: the old master simply stays. Ask again, of
	// the next sentinel, until the whole wait runs out.
	var lastErr error
	for attempt := 0; wctx.Err() == nil; attempt++ {
		if err := s.requestFailover(wctx, s.Sentinels[attempt%len(s.Sentinels)].Addr); err != nil {
			return "", err
		}
		actx, acancel := context.WithTimeout(wctx, 15*time.Second)
		newMaster, err := s.waitNewMaster(actx, old)
		acancel()
		if err == nil {
			return newMaster, nil
		}
		lastErr = err
	}
	return "", fmt.Errorf("SENTINEL FAILOVER asked again each 15 s: %w", lastErr)
}

// requestFailover sends SENTINEL FAILOVER to the sentinel at addr, asking
// again while it answers NOGOODSLAVE (no fresh INFO from the replica yet)
// or INPROG (a failover under way).
func (s *Sentinel) requestFailover(ctx context.Context, addr string) error {
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer func() { _ = sc.Close() }()
	return poll(ctx, 200*time.Millisecond, "SENTINEL FAILOVER", func(ctx context.Context) (bool, string, error) {
		err := sc.Failover(ctx, MasterName).Err()
		if err == nil {
			return true, "", nil
		}
		if strings.Contains(err.Error(), "NOGOODSLAVE") || strings.Contains(err.Error(), "INPROG") {
			return notYet("", err)
		}
		return false, "", err
	})
}

// KillMaster SIGKILLs the master, as a crash would, and waits until the
// sentinels have seen it down (down-after-milliseconds, 2 s), elected the
// replica and it acts as master. It returns the new master's address and
// the killed node: Restart it, and the sentinels turn it into a replica
// of the new master (see WaitSettled). Writes the replica had not received
// are lost.
func (s *Sentinel) KillMaster(ctx context.Context) (string, *Node, error) {
	old, err := s.MasterAddr(ctx)
	if err != nil {
		return "", nil, err
	}
	victim := s.node(old)
	if victim == nil {
		return "", nil, errors.New("sentinel names unknown master " + old)
	}
	victim.Kill()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	newMaster, err := s.waitNewMaster(wctx, old)
	return newMaster, victim, err
}

// waitNewMaster waits until the sentinels name a master other than old and
// it acts as one, and returns its address.
func (s *Sentinel) waitNewMaster(wctx context.Context, old string) (string, error) {
	var newMaster string
	err := poll(wctx, 100*time.Millisecond, "wait for the new master", func(ctx context.Context) (bool, string, error) {
		m, err := s.MasterAddr(ctx)
		if err != nil {
			return notYet("", err)
		}
		if m == old {
			return false, "sentinel still names " + old, nil
		}
		if s.node(m) == nil {
			return false, "", errors.New("sentinel names unknown master " + m)
		}
		newMaster = m
		return true, "", nil
	})
	if err != nil {
		return "", err
	}
	err = poll(wctx, 50*time.Millisecond, "wait for "+newMaster+" to act as master", func(ctx context.Context) (bool, string, error) {
		rdb := s.node(newMaster).Client()
		defer rdb.Close()
		repl, err := info(ctx, rdb, "replication")
		if err != nil {
			return notYet("", err)
		}
		return repl["role"] == "master", "role=" + repl["role"], nil
	})
	if err != nil {
		return "", err
	}
	return newMaster, nil
}

// WaitSettled waits until the set-up is whole again after a failover: every
// sentinel names the current master and knows its replica, which is in sync.
// After SENTINEL FAILOVER the sentinels take about 10s to turn the old master
// into a replica; until then it still takes writes from clients connected
// to it, which are lost when it resyncs.
func (s *Sentinel) WaitSettled(ctx context.Context) error {
	master, err := s.MasterAddr(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return s.waitSettled(ctx, master)
}
