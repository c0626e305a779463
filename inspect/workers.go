package inspect

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
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
}

// Workers lists the worker connections of queue ("" = every queue under
// the prefix), by queue and name.
func (i *Inspector) Workers(ctx context.Context, queue string) ([]WorkerInfo, error) {
	list, err := i.rdb.ClientList(ctx).Result()
	if err != nil {
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
