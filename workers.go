package drover

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/outage"
	"github.com/seed40057009/drover/internal/redisclone"
)

// Worker discovery, as BullMQ does it: every worker names one connection
// with CLIENT SETNAME "<prefix>:<base64(queue)>", or
// "<prefix>:<base64(queue)>:w:<worker name>" when the worker has a name
// (bullmq's createBlockingConnection), and Queue.getWorkers() lists the
// CLIENT LIST entries with such names. A drover worker keeps one such
// connection open (presence), so Node's getWorkers()/getWorkersCount() and
// drover's Queue.GetWorkers see Node and drover workers alike.

// workerClientName is the connection name BullMQ gives a worker of queue.
func workerClientName(prefix, queue, workerName string) string {
	n := prefix + ":" + base64.StdEncoding.EncodeToString([]byte(queue))
	if workerName != "" {
		n += ":w:" + workerName
	}
	return n
}

// presenceInterval is how often a worker pings its presence connection:
// that reconnects it (and so names it again) after a Redis restart, and
// keeps its idle time (CLIENT LIST's idle) low while the worker runs.
const presenceInterval = 5 * time.Second

// presence owns the worker's named connection: a client of its own with one
// connection, made from the caller's client's options with BullMQ's name as
// ClientName (go-redis names every connection it opens), as BullMQ
// duplicates the connection for its worker. It does not take a connection
// from the caller's pool. register opens it (Start calls it once, so a
// worker is listed as soon as Start returns); run pings it every
// presenceInterval until ctx ends, then closes it.
type presence struct {
	rdb      redis.UniversalClient
	name     string
	slotKey  string // a key of the queue: on a cluster, the node to stay on
	interval time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	conn   *redis.Client
	warned bool
	// infoRefused: Redis refused the INFO that reads node (logged once).
	infoRefused bool
	// node is the run_id of the server conn is connected to, read when it
	// opened, for a Sentinel client only (followsMaster).
	node atomic.Value // string
	// blocking is conn while the fetcher waits on it (block), for
	// interrupt, which must not wait for mu.
	blocking atomic.Pointer[redis.Client]
}

// register pings the connection, opening it first if needed. Errors are
// logged (once until a success): discovery is best effort, as in BullMQ.
func (p *presence) register(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.ping(ctx)
	if err != nil {
		if p.conn != nil {
			p.conn.Close()
			p.conn = nil
		}
		if !p.warned {
			p.warned = true
			p.log.WarnContext(ctx, "cannot name the worker's connection: Node's getWorkers will not list this worker",
				slog.String(logkey.ClientName, p.name), slog.Any(logkey.Error, err))
		}
		return
	}
	p.warned = false
}

func (p *presence) ping(ctx context.Context) error {
	if p.conn == nil {
		var c *redis.Client
		switch rdb := p.rdb.(type) {
		case *redis.Client:
			c = rdb
		case *redis.ClusterClient:
			var err error
			if c, err = rdb.MasterForKey(ctx, p.slotKey); err != nil {
				return err
			}
		default:
			return fmt.Errorf("a %T has no single node to name a connection on", p.rdb)
		}
		p.conn = redisclone.Client(c, func(opt *redis.Options) {
			opt.ClientName = p.name
			opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns, opt.MaxActiveConns = 1, 0, 1, 1
		})
		p.node.Store("")
		if p.followsMaster() {
			conn := p.conn
			id, err := bounded.Call(ctx, func(ctx context.Context) (string, error) { return runID(ctx, conn) })
			switch {
			case err == nil:
				p.node.Store(id)
			case ctx.Err() == nil && !outage.Is(err) && outage.ReplyCode(err) != "":
				// A user without INFO (a managed Redis's ACL): the
				// connection is named all the same, without following the
				// master (node "": masterMoved says no). After a failover a
				// wait on it ends by the demoted master's error instead.
				if !p.infoRefused {
					p.infoRefused = true
					p.log.InfoContext(ctx, "Redis refuses INFO: the worker's named connection does not follow Sentinel failovers by itself",
						slog.Any(logkey.Error, err))
				}
			default:
				return err
			}
		}
	}
	// bounded: the client may ignore ctx (see internal/bounded), and Close
	// must not wait for a Redis that does not answer; an abandoned ping is
	// ended by register closing the connection.
	conn := p.conn
	_, err := bounded.Call(ctx, func(ctx context.Context) (string, error) { return conn.Ping(ctx).Result() })
	return err
}

// block runs fn, the fetcher's blocking wait for jobs, on the named
// connection, as a Node worker blocks on its named connection: CLIENT LIST
// then shows the worker blocked (flag b) exactly while it waits, which is
// how the dashboard and the CLI tell an idle worker from a busy one. used is
// false when the connection is not open (the caller then waits on its own
// pool). An error other than a timeout or a cancel closes the connection, so
// the next ping opens it again (on a cluster, on the slot's current master).
func (p *presence) block(ctx context.Context, fn func(c *redis.Client) error) (used bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		return false, nil
	}
	p.blocking.Store(p.conn)
	err = fn(p.conn)
	interrupted := p.blocking.Swap(nil) == nil
	if interrupted || err != nil && !errors.Is(err, redis.Nil) && ctx.Err() == nil {
		p.conn.Close()
		p.conn = nil
	}
	if interrupted && err != nil {
		err = errWaitInterrupted
	}
	return true, err
}

// errWaitInterrupted is block's error when interrupt ended the wait (a
// reply that came in first is returned as it is).
var errWaitInterrupted = errors.New("wait for jobs interrupted")

// interrupt ends the fetcher's wait on the named connection, if it waits
// there, at once and without a round trip to Redis: it closes the
// connection (block then drops it). A wake-up written to Redis instead
// waits for Redis to answer, which a partitioned network or a paused
// server never does before the client's read timeout, and then the wait
// itself runs out its block time. It reports whether there was a wait to
// end. Close calls it once it has stopped the fetcher.
func (p *presence) interrupt() bool {
	c := p.blocking.Swap(nil)
	if c == nil {
		return false
	}
	_ = c.Close()
	return true
}

// reopen opens the connection again when an interrupt (or an error) dropped
// it; a paused fetcher calls it so the worker stays listed.
func (p *presence) reopen(ctx context.Context) {
	p.mu.Lock()
	open := p.conn != nil
	p.mu.Unlock()
	if !open {
		p.register(ctx)
	}
}

func (p *presence) run(ctx context.Context) {
	defer func() {
		p.mu.Lock()
		if p.conn != nil {
			p.conn.Close()
			p.conn = nil
		}
		p.mu.Unlock()
	}()
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	// On a Sentinel client the master is looked up every second while the
	// fetcher waits on the named connection (one INFO a second from an idle
	// worker), so a failover ends that wait within about a second.
	var moved <-chan time.Time
	if p.followsMaster() {
		t := time.NewTicker(masterCheckInterval)
		defer t.Stop()
		moved = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-moved:
			if p.blocking.Load() != nil && p.masterMoved(ctx) && p.interrupt() {
				p.log.InfoContext(ctx, "the master changed: waiting for jobs on the new one")
			}
			continue
		case <-ticker.C:
		}
		// The fetcher blocked on the connection keeps it in use (and tells
		// a broken one by its error): no ping needed then.
		if p.mu.TryLock() {
			if p.conn != nil && p.followsMaster() && p.masterMoved(ctx) {
				// Not waiting on it now: reopen it on the new master.
				p.conn.Close()
				p.conn = nil
			}
			p.mu.Unlock()
			p.register(ctx)
		}
	}
}

// masterCheckInterval is how often a worker on a Sentinel client that waits
// for jobs checks that its named connection is still on the master.
const masterCheckInterval = time.Second

// followsMaster reports whether the caller's client is a Sentinel (failover)
// client, whose master changes under a connection of the presence's own:
// go-redis closes its pool's connections to a demoted master when the
// sentinels announce the new one, but not the presence's, on which the
// fetcher may be blocked. The demoted master answers that block only when
// the sentinels reconfigure it, 10 s or more later.
func (p *presence) followsMaster() bool {
	c, ok := p.rdb.(*redis.Client)
	return ok && c.Options().Addr == sentinelClientAddr
}

// sentinelClientAddr is the Addr go-redis gives a NewFailoverClient.
const sentinelClientAddr = "FailoverClient"

// masterMoved reports whether the caller's client now talks to another
// server than the presence connection (a Sentinel failover). run then ends
// the fetcher's wait there, so it takes jobs from the new master at once,
// and opens the named connection again on the new master.
func (p *presence) masterMoved(ctx context.Context) bool {
	node, _ := p.node.Load().(string)
	if node == "" {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, p.interval)
	defer cancel()
	id, err := bounded.Call(cctx, func(ctx context.Context) (string, error) { return runID(ctx, p.rdb) })
	return err == nil && id != node
}

// runID is the run_id of the server c's next command reaches.
func runID(ctx context.Context, c redis.UniversalClient) (string, error) {
	info, err := c.Do(ctx, "info", "server").Text()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("INFO server has no run_id")
}

// WorkerInfo is one worker of a queue, Node BullMQ's or drover's, as Redis
// lists its named connection (CLIENT LIST): what BullMQ's
// Queue.getWorkers() returns, typed.
type WorkerInfo struct {
	// Name is the worker's name (WorkerOptions.Name, BullMQ's Worker
	// opts.name); "" for a worker without one.
	Name string
	// ClientName is the connection's raw name:
	// "<prefix>:<base64(queue)>" or "<prefix>:<base64(queue)>:w:<name>".
	ClientName string
	// ClientID is Redis's id of the connection.
	ClientID int64
	// Addr is the worker's address as Redis sees it (host:port).
	Addr string
	// Age is how long the connection has been open.
	Age time.Duration
	// Idle is how long ago the connection last sent a command. A drover
	// worker waits for jobs on it and pings it every 5 s otherwise; a Node
	// worker's connection is idle while it waits for jobs.
	Idle time.Duration
}

// GetWorkers lists the workers of the queue, Node's and drover's, from
// CLIENT LIST (BullMQ's Queue.getWorkers). On a Redis Cluster it lists the
// node with the most of them, as BullMQ does. A server that refuses CLIENT
// LIST (some managed Redis) makes it fail.
func (q *Queue) GetWorkers(ctx context.Context) ([]WorkerInfo, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	var lists []string
	if cc, ok := q.rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
			l, err := c.ClientList(ctx).Result()
			mu.Lock()
			lists = append(lists, l)
			mu.Unlock()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list workers of queue %q: %w", q.name, err)
		}
	} else {
		l, err := callWithin(ctx, q, func(ctx context.Context) (string, error) { return q.rdb.ClientList(ctx).Result() })
		if err != nil {
			return nil, fmt.Errorf("list workers of queue %q: %w", q.name, err)
		}
		lists = []string{l}
	}
	var best []WorkerInfo
	for _, l := range lists {
		if ws := parseWorkers(l, workerClientName(q.k.Prefix(), q.name, "")); len(ws) > len(best) {
			best = ws
		}
	}
	return best, nil
}

// GetWorkersCount is len(GetWorkers): BullMQ's Queue.getWorkersCount.
func (q *Queue) GetWorkersCount(ctx context.Context) (int, error) {
	ws, err := q.GetWorkers(ctx)
	return len(ws), err
}

// parseWorkers reads CLIENT LIST output ("k=v k=v ..." per line) and keeps
// the connections BullMQ's getWorkers matches: named base exactly, or
// base + ":w:" + a worker name.
func parseWorkers(list, base string) []WorkerInfo {
	lines := strings.Split(list, "\n")
	out := make([]WorkerInfo, 0, len(lines))
	for _, line := range lines {
		line = strings.TrimRight(line, "\r")
		fields := map[string]string{}
		for _, kv := range strings.Split(line, " ") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		name := fields["name"]
		var wname string
		switch {
		case name == base:
		case strings.HasPrefix(name, base+":w:"):
			wname = strings.TrimPrefix(name, base+":w:")
		default:
			continue
		}
		id, _ := strconv.ParseInt(fields["id"], 10, 64)
		age, _ := strconv.ParseInt(fields["age"], 10, 64)
		idle, _ := strconv.ParseInt(fields["idle"], 10, 64)
		out = append(out, WorkerInfo{
			Name: wname, ClientName: name, ClientID: id, Addr: fields["addr"],
			Age: time.Duration(age) * time.Second, Idle: time.Duration(idle) * time.Second,
		})
	}
	return out
}
