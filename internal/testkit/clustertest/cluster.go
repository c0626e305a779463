package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/keys"
)

// NodeTimeout is the cluster-node-timeout of every node: how long a node may
// be unreachable before the others mark it failing. Short, so tests that
// break nodes converge quickly.
const NodeTimeout = 2 * time.Second

// Cluster is a local Redis Cluster: masters and their replicas, each a
// redis-server --cluster-enabled yes on a loopback port, joined with
// redis-cli --cluster create.
type Cluster struct {
	// Nodes are every node, in the order they were given to redis-cli
	// (masters first). Roles change with failovers: ask Shards.
	Nodes []*Node

	masters, replicas int
	stopOnce          sync.Once
}

// StartCluster starts masters*(1+replicas) nodes and joins them into one
// cluster, each master with replicas replicas, then waits until every node
// reports cluster_state:ok, agrees on who serves every slot, and every
// replica is in sync. redis-cli needs masters >= 3. The caller owns the
// cluster and must Stop it.
func StartCluster(ctx context.Context, masters, replicas int) (*Cluster, error) {
	if masters < 3 {
		return nil, fmt.Errorf("redis-cli --cluster create needs at least 3 masters, got %d", masters)
	}
	server, err := lookPath("redis-server")
	if err != nil {
		return nil, err
	}
	cli, err := lookPath("redis-cli")
	if err != nil {
		return nil, err
	}
	c := &Cluster{masters: masters, replicas: replicas}
	total := masters * (1 + replicas)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var startErr error
	nodes := make([]*Node, total)
	for i := range total {
		wg.Go(func() {
			n, err := startNode(server, true, nil, func(port int, dir string) []string {
				return []string{
					"--cluster-enabled", "yes",
					"--cluster-config-file", dir + "/nodes.conf",
					"--cluster-node-timeout", strconv.FormatInt(NodeTimeout.Milliseconds(), 10),
					"--save", "", "--appendonly", "no",
					// Fast full syncs when a demoted master re-attaches.
					"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
					"--repl-diskless-load", "on-empty-db",
				}
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				startErr = errors.Join(startErr, err)
				return
			}
			nodes[i] = n
		})
	}
	wg.Wait()
	for _, n := range nodes {
		if n != nil {
			c.Nodes = append(c.Nodes, n)
		}
	}
	if startErr != nil {
		c.Stop()
		return nil, startErr
	}

	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		logs := c.logs()
		c.Stop()
		return nil, fmt.Errorf("%w\n%s", err, logs)
	}
	return c, nil
}

func (c *Cluster) logs() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		fmt.Fprintf(&b, "--- %s\n%s\n", n.Addr, n.Log())
	}
	return b.String()
}

// Stop kills every node and removes their directories. It is idempotent.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		var wg sync.WaitGroup
		for _, n := range c.Nodes {
			wg.Go(n.Stop)
		}
		wg.Wait()
	})
}

// Addrs are every node's address, the seed list of a cluster client.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// NewClient returns a cluster client seeded with every node; opts may be nil.
// The caller closes it.
func (c *Cluster) NewClient(opts *redis.ClusterOptions) *redis.ClusterClient {
	var o redis.ClusterOptions
	if opts != nil {
		o = *opts
	}
	o.Addrs = c.Addrs()
	return redis.NewClusterClient(&o)
}

// Node returns the node at addr, or nil.
func (c *Cluster) Node(addr string) *Node {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// Shard is one master, its replicas and the slots it serves.
type Shard struct {
	Master   string
	Replicas []string
	Slots    []redis.SlotRange
}

// Serves reports whether the shard serves slot.
func (s Shard) Serves(slot int) bool {
	for _, r := range s.Slots {
		if int64(slot) >= r.Start && int64(slot) <= r.End {
			return true
		}
	}
	return false
}

// Shards reads CLUSTER SHARDS from one node (the first that answers): one
// entry per master that serves slots, sorted by master address.
func (c *Cluster) Shards(ctx context.Context) ([]Shard, error) {
	var lastErr error
	for _, n := range c.Nodes {
		shards, err := shardsFrom(ctx, n)
		if err == nil {
			return shards, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("CLUSTER SHARDS: no node answered: %w", lastErr)
}

func shardsFrom(ctx context.Context, n *Node) ([]Shard, error) {
	rdb := n.Client()
	defer rdb.Close()
	raw, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []Shard
	for _, s := range raw {
		if len(s.Slots) == 0 {
			continue
		}
		sh := Shard{Slots: s.Slots}
		for _, nd := range s.Nodes {
			addr := fmt.Sprintf("%s:%d", nd.IP, nd.Port)
			switch nd.Role {
			case "master":
				sh.Master = addr
			case "replica":
				// "loading" also means "offset not gossiped yet" (it stays
				// so until the master's offset moves); only "fail" is out.
				// WaitHealthy checks each replica's link itself.
				if nd.Health != "fail" {
					sh.Replicas = append(sh.Replicas, addr)
				}
			}
		}
		slices.Sort(sh.Replicas)
		out = append(out, sh)
	}
	slices.SortFunc(out, func(a, b Shard) int { return strings.Compare(a.Master, b.Master) })
	return out, nil
}

// MasterOf returns the address of the master serving slot.
func (c *Cluster) MasterOf(ctx context.Context, slot int) (string, error) {
	shards, err := c.Shards(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range shards {
		if s.Serves(slot) {
			return s.Master, nil
		}
	}
	return "", fmt.Errorf("no master serves slot %d", slot)
}

// TagsByMaster returns, for each master (in Shards order), perMaster hash
// tags whose slot that master serves. Tags are "<base><n>" for n = 0, 1, ...,
// so a caller gets the same tags for the same topology. Each tag's slot is
// checked against the server's own CLUSTER KEYSLOT.
func (c *Cluster) TagsByMaster(ctx context.Context, base string, perMaster int) ([]Shard, [][]string, error) {
	shards, err := c.Shards(ctx)
	if err != nil {
		return nil, nil, err
	}
	tags := make([][]string, len(shards))
	need := len(shards) * perMaster
	for i := 0; need > 0 && i < 100000; i++ {
		tag := base + strconv.Itoa(i)
		slot := keys.Slot("{" + tag + "}")
		for si, s := range shards {
			if s.Serves(slot) && len(tags[si]) < perMaster {
				tags[si] = append(tags[si], tag)
				need--
			}
		}
	}
	if need > 0 {
		return nil, nil, fmt.Errorf("found no %d tags per master", perMaster)
	}
	rdb := c.Nodes[0].Client()
	defer rdb.Close()
	for _, ts := range tags {
		for _, tag := range ts {
			got, err := rdb.ClusterKeySlot(ctx, "x{"+tag+"}y").Result()
			if err != nil {
				return nil, nil, err
			}
			if want := keys.Slot("{" + tag + "}"); int(got) != want {
				return nil, nil, fmt.Errorf("CLUSTER KEYSLOT of tag %q is %d, keys.Slot says %d", tag, got, want)
			}
		}
	}
	return shards, tags, nil
}

// WaitHealthy waits until every node answers, reports cluster_state:ok with
// all 16384 slots served and every other node known, all nodes agree on the
// master of every slot, every master has its replicas online, and every
// replica's link to its master is up.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return poll(ctx, 50*time.Millisecond, "wait for the cluster to be healthy", func(ctx context.Context) (bool, string, error) {
		var first []Shard
		for _, n := range c.Nodes {
			ok, why := nodeHealthy(ctx, n, len(c.Nodes))
			if !ok {
				return false, n.Addr + ": " + why, nil
			}
			shards, err := shardsFrom(ctx, n)
			if err != nil {
				return notYet(n.Addr+": ", err)
			}
			if len(shards) != c.masters {
				return false, fmt.Sprintf("%s sees %d masters serving slots, want %d", n.Addr, len(shards), c.masters), nil
			}
			for _, s := range shards {
				if len(s.Replicas) != c.replicas {
					return false, fmt.Sprintf("%s sees %d online replicas of %s, want %d", n.Addr, len(s.Replicas), s.Master, c.replicas), nil
				}
			}
			if first == nil {
				first = shards
			} else if !sameMasters(first, shards) {
				return false, n.Addr + " disagrees on slot masters", nil
			}
		}
		return true, "", nil
	})
}

func sameMasters(a, b []Shard) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Master != b[i].Master || !slices.Equal(a[i].Slots, b[i].Slots) || !slices.Equal(a[i].Replicas, b[i].Replicas) {
			return false
		}
	}
	return true
}

func nodeHealthy(ctx context.Context, n *Node, total int) (bool, string) {
	rdb := n.Client()
	defer rdb.Close()
	ci, err := rdb.ClusterInfo(ctx).Result()
	if err != nil {
		return false, err.Error()
	}
	f := parseFields(ci, ':')
	if f["cluster_state"] != "ok" || f["cluster_slots_ok"] != "16384" || f["cluster_known_nodes"] != strconv.Itoa(total) {
		return false, fmt.Sprintf("cluster_state=%s slots_ok=%s known_nodes=%s", f["cluster_state"], f["cluster_slots_ok"], f["cluster_known_nodes"])
	}
	repl, err := info(ctx, rdb, "replication")
	if err != nil {
		return false, err.Error()
	}
	if repl["role"] == "slave" && (repl["master_link_status"] != "up" || repl["master_sync_in_progress"] != "0") {
		return false, "replica not in sync: master_link_status=" + repl["master_link_status"]
	}
	return true, ""
}

// Failover promotes a replica of master with CLUSTER FAILOVER (the manual,
// graceful kind: the master stops writes until the replica has caught up,
// then they swap roles) and waits until the cluster is healthy again with
// the replica serving the slots. It returns the new master's address.
func (c *Cluster) Failover(ctx context.Context, master string) (string, error) {
	shards, err := c.Shards(ctx)
	if err != nil {
		return "", err
	}
	var shard *Shard
	for i := range shards {
		if shards[i].Master == master {
			shard = &shards[i]
		}
	}
	if shard == nil || len(shard.Replicas) == 0 {
		return "", fmt.Errorf("failover: %s is not a master with a replica (shards: %+v)", master, shards)
	}
	replica := c.Node(shard.Replicas[0])
	if replica == nil {
		return "", fmt.Errorf("failover: replica %s is not a node of this cluster", shard.Replicas[0])
	}
	rdb := replica.Client()
	defer rdb.Close()
	if err := rdb.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		return "", fmt.Errorf("CLUSTER FAILOVER on %s: %w", replica.Addr, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = poll(wctx, 50*time.Millisecond, "wait for "+replica.Addr+" to become master", func(ctx context.Context) (bool, string, error) {
		repl, err := info(ctx, rdb, "replication")
		if err != nil {
			return notYet("", err)
		}
		return repl["role"] == "master", "role=" + repl["role"], nil
	})
	if err != nil {
		return "", err
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return "", err
	}
	return replica.Addr, nil
}

// WaitReplicated waits until every master's replicas have acknowledged all
// the writes the master took before the call.
func (c *Cluster) WaitReplicated(ctx context.Context) error {
	shards, err := c.Shards(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, s := range shards {
		if err := waitReplicated(ctx, c.Node(s.Master), c.replicas); err != nil {
			return err
		}
	}
	return nil
}

// KillMaster SIGKILLs master, as a crash would, and waits until the other
// nodes have elected its replica in its place (after NodeTimeout) and report
// cluster_state:ok again. It returns the new master's address and the killed
// node, which Restart brings back. Writes the master acknowledged but had not
// replicated yet are lost, as with any Redis crash: call WaitReplicated first
// for the writes that must survive.
func (c *Cluster) KillMaster(ctx context.Context, master string) (string, *Node, error) {
	victim := c.Node(master)
	if victim == nil {
		return "", nil, fmt.Errorf("kill: %s is not a node of this cluster", master)
	}
	shards, err := c.Shards(ctx)
	if err != nil {
		return "", nil, err
	}
	slot := -1
	for _, s := range shards {
		if s.Master == master {
			slot = int(s.Slots[0].Start)
		}
	}
	if slot < 0 {
		return "", nil, fmt.Errorf("kill: %s is not a master", master)
	}
	victim.Kill()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var newMaster string
	err = poll(wctx, 50*time.Millisecond, "wait for a replica to replace killed master "+master, func(ctx context.Context) (bool, string, error) {
		newMaster = ""
		for _, n := range c.Nodes {
			if n == victim {
				continue
			}
			rdb := n.Client()
			ci, err := rdb.ClusterInfo(ctx).Result()
			_ = rdb.Close()
			if err != nil {
				return notYet(n.Addr+": ", err)
			}
			if st := parseFields(ci, ':')["cluster_state"]; st != "ok" {
				return false, n.Addr + ": cluster_state=" + st, nil
			}
			shards, err := shardsFrom(ctx, n)
			if err != nil {
				return notYet(n.Addr+": ", err)
			}
			for _, s := range shards {
				if !s.Serves(slot) {
					continue
				}
				if s.Master == master {
					return false, n.Addr + " still names " + master, nil
				}
				if newMaster != "" && newMaster != s.Master {
					return false, "nodes disagree on the new master", nil
				}
				newMaster = s.Master
			}
		}
		return newMaster != "", "no new master yet", nil
	})
	if err != nil {
		return "", nil, err
	}
	return newMaster, victim, nil
}

// Restart starts a node killed by KillMaster again and waits until the
// cluster is whole: it rejoins as a replica of the master that replaced it.
func (c *Cluster) Restart(ctx context.Context, n *Node) error {
	if err := n.Restart(); err != nil {
		return err
	}
	return c.WaitHealthy(ctx)
}

// DeletePrefix removes, on every master, every key that starts with prefix + ":"
// (see CountKeys for why the colon).
func DeletePrefix(ctx context.Context, rdb *redis.ClusterClient, prefix string) error {
	return rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, prefix+":*", 2000).Iterator()
		pipe := node.Pipeline()
		for iter.Next(ctx) {
			// One key per UNLINK: keys of different slots cannot share a command.
			pipe.Unlink(ctx, iter.Val())
			if pipe.Len() >= 2000 {
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if pipe.Len() > 0 {
			_, err := pipe.Exec(ctx)
			return err
		}
		return nil
	})
}

// CountKeys counts, over every master, the keys that start with prefix + ":".
// The colon matters: UniquePrefix hands out c1-1 and c1-10, and the keys
// of one parallel test must not count (or be deleted) as another's.
func CountKeys(ctx context.Context, rdb *redis.ClusterClient, prefix string) (int, error) {
	// Distinct names: just after a failover the client's view of the
	// cluster may still hold the old master beside the new one, both with
	// the key (CountKeys counted 2 for 1 key right after the failover
	// tests).
	var mu sync.Mutex
	seen := map[string]struct{}{}
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, prefix+":*", 2000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			seen[iter.Val()] = struct{}{}
			mu.Unlock()
		}
		return iter.Err()
	})
	return len(seen), err
}
