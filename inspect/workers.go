package inspect

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/outage"
)

// Workers are found the way BullMQ's Queue.getWorkers finds them: every
// worker names its Redis connection after its queue with CLIENT SETNAME,
// "<prefix>:<base64 of the queue name>" or, for a worker with a name,
// "<prefix>:<base64 of the queue name>:w:<name>". CLIENT LIST shows those
// connections, Node's and (once drover's workers name theirs the same way)
// drover's.

// WorkerInfo is one worker connection.
type WorkerInfo struct {
	Queue string `json:"queue"`
	// Name is the worker's name ("" for an unnamed worker).
	Name string `json:"name"`
	// Addr is the client's address as Redis sees it.
	Addr string `json:"addr"`
	// Age is how long the connection has been open; Idle how long since its
	// last command (ms in JSON).
	Age  time.Duration `json:"-"`
	Idle time.Duration `json:"-"`
	// Waiting says the connection is blocked right now (CLIENT LIST flag
	// b) waiting for a job on the queue's marker: the worker is idle. Node's
	// and drover's workers both wait on their named connection. Otherwise
	// the worker is running jobs (or between two fetches). The last command
	// alone says nothing: a worker that took a job and is running it still
	// shows bzpopmin as its named connection's last command.
	Waiting bool `json:"waiting"`
	// LastCommand is the connection's last command.
	LastCommand string `json:"lastCommand"`
	// Running is how many of the queue's active jobs name this worker as
	// the one processing them (their processedBy, which Node's and
	// drover's named workers write), or -1 for an unnamed worker, which
	// leaves no name on its jobs. Workers that share a name (replicas of one
	// deployment, often) leave the same name on their jobs, so each of them
	// shows the jobs of all. A worker with free slots waits for jobs while
	// it runs others, so Waiting alone does not mean idle.
	Running int `json:"running"`
}

// runningCap bounds how many active jobs Workers reads to count each
// worker's running jobs: one pipelined read of their processedBy fields.
const runningCap = 5000

// ErrWorkersHidden: the Redis server refused CLIENT LIST (an ACL without
// the client commands, a managed service that disables them, an embedded
// engine without it), so no worker connection can be found. Nothing is
// wrong with the queues.
var ErrWorkersHidden = errors.New("this Redis does not let clients list its connections (CLIENT LIST), so workers cannot be found")

// Workers lists the worker connections of queue ("" = every queue under
// the prefix), by queue and name.
func (i *Inspector) Workers(ctx context.Context, queue string) ([]WorkerInfo, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	list, err := i.rdb.ClientList(ctx).Result()
	if err != nil {
		// A reply that is not an outage (LOADING, BUSY...) refuses the command.
		if _, refused := errors.AsType[redis.Error](err); refused && !outage.Is(err) {
			return nil, fmt.Errorf("%w: %w", ErrWorkersHidden, err)
		}
		return nil, fmt.Errorf("list worker connections (CLIENT LIST): %w", err)
	}
	out := []WorkerInfo{}
	for _, line := range strings.Split(list, "\n") {
		f := clientFields(line)
		q, name, ok := i.workerName(f["name"])
		if !ok || (queue != "" && q != queue) {
			continue
		}
		w := WorkerInfo{Queue: q, Name: name, Addr: f["addr"], LastCommand: f["cmd"]}
		if n, err := strconv.ParseInt(f["age"], 10, 64); err == nil {
			w.Age = time.Duration(n) * time.Second
		}
		if n, err := strconv.ParseInt(f["idle"], 10, 64); err == nil {
			w.Idle = time.Duration(n) * time.Second
		}
		w.Waiting = strings.Contains(f["flags"], "b")
		out = append(out, w)
	}
	if err := i.countRunning(ctx, out); err != nil {
		return nil, err
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Queue != out[b].Queue {
			return out[a].Queue < out[b].Queue
		}
		if out[a].Name != out[b].Name {
			return out[a].Name < out[b].Name
		}
		return out[a].Addr < out[b].Addr
	})
	return out, nil
}

// countRunning sets each worker's Running from its queue's active jobs
// (the first runningCap of them), in one round trip per queue with a
// named worker.
func (i *Inspector) countRunning(ctx context.Context, ws []WorkerInfo) error {
	named := map[string]bool{}
	for k := range ws {
		ws[k].Running = -1
		if ws[k].Name != "" {
			named[ws[k].Queue] = true
		}
	}
	for q := range named {
		k := i.keys(q)
		ids, err := i.rdb.LRange(ctx, k.Active(), 0, runningCap-1).Result()
		if err != nil {
			return fmt.Errorf("list the active jobs of queue %q: %w", q, err)
		}
		cmds := make([]*redis.StringCmd, len(ids))
		if len(ids) > 0 {
			_, err = i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for n, id := range ids {
					cmds[n] = p.HGet(ctx, k.Job(id), "pb")
				}
				return nil
			})
			if err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("read who runs the active jobs of queue %q: %w", q, err)
			}
		}
		by := map[string]int{}
		for _, c := range cmds {
			if c != nil && c.Err() == nil {
				by[c.Val()]++
			}
		}
		for n := range ws {
			if ws[n].Queue == q && ws[n].Name != "" {
				ws[n].Running = by[ws[n].Name]
			}
		}
	}
	return nil
}

// workerName reads a worker connection name under this prefix: the queue
// and the worker's name. QueueEvents connections (":qe") are not workers.
func (i *Inspector) workerName(conn string) (queue, name string, ok bool) {
	rest, found := strings.CutPrefix(conn, i.opts.Prefix+":")
	if !found || rest == "" {
		return "", "", false
	}
	enc, name, named := strings.Cut(rest, ":w:")
	if !named && strings.Contains(rest, ":") {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return "", "", false
	}
	return string(b), name, true
}

// clientFields splits a CLIENT LIST line ("id=7 addr=... name=...") into
// its fields.
func clientFields(line string) map[string]string {
	f := map[string]string{}
	for _, kv := range strings.Fields(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	return f
}

// MarshalJSON writes Age and Idle in ms.
func (w WorkerInfo) MarshalJSON() ([]byte, error) {
	type plain WorkerInfo
	return marshalMs(plain(w), msField{name: "age", d: &w.Age}, msField{name: "idle", d: &w.Idle})
}
