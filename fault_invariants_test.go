package drover_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/orphans"
)

// queueStates is where each job of a queue is, read once the queue is
// quiet (no worker, no producer): the invariants a fault must not break.
type queueStates struct {
	k      keys.Queue
	where  map[string][]string // job id -> the state sets that hold it
	hashes map[string]map[string]string
}

// readQueueStates reads every state set of the queue and the hash of each
// job they hold.
func readQueueStates(t *testing.T, rdb *redis.Client, prefix, name string) *queueStates {
	t.Helper()
	ctx := context.Background()
	k := keys.New(prefix, name)
	s := &queueStates{k: k, where: map[string][]string{}, hashes: map[string]map[string]string{}}
	for state, key := range map[string]string{"wait": k.Wait(), "paused": k.Paused(), "active": k.Active()} {
		ids, err := rdb.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatalf("lrange %s: %v", key, err)
		}
		for _, id := range ids {
			s.where[id] = append(s.where[id], state)
		}
	}
	for state, key := range map[string]string{"prioritized": k.Prioritized(), "delayed": k.Delayed(),
		"completed": k.Completed(), "failed": k.Failed(), "waiting-children": k.WaitingChildren()} {
		ids, err := rdb.ZRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatalf("zrange %s: %v", key, err)
		}
		for _, id := range ids {
			s.where[id] = append(s.where[id], state)
		}
	}
	for id := range s.where {
		h, err := rdb.HGetAll(ctx, k.Job(id)).Result()
		if err != nil {
			t.Fatalf("hgetall %s: %v", id, err)
		}
		s.hashes[id] = h
	}
	return s
}

// in returns the ids held by state, sorted.
func (s *queueStates) in(state string) []string {
	var out []string
	for id, w := range s.where {
		for _, st := range w {
			if st == state {
				out = append(out, id)
			}
		}
	}
	sort.Strings(out)
	return out
}

// violations lists every broken invariant: a job in more than one state
// set (or twice in one), a state set naming a job with no hash, a job hash
// no state set holds (an orphan), a parent's pending dependency that is
// missing or does not name the parent, a child whose parent does not list
// it, a parent with pending children outside waiting-children, a job left
// active, or a lock left behind.
func (s *queueStates) violations(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	ctx := context.Background()
	var v []string
	for id, w := range s.where {
		if len(w) != 1 {
			v = append(v, fmt.Sprintf("job %s is in %v", id, w))
		}
		if len(s.hashes[id]) == 0 {
			v = append(v, fmt.Sprintf("job %s is in %v without a hash", id, w))
		}
	}
	n, err := orphans.Sweep(ctx, rdb, s.k, 0, 0, false)
	if err != nil {
		t.Fatalf("orphans: %v", err)
	}
	if n != 0 {
		v = append(v, fmt.Sprintf("%d job hashes in no state", n))
	}
	for id, h := range s.hashes {
		deps, err := rdb.SMembers(ctx, s.k.Dependencies(id)).Result()
		if err != nil {
			t.Fatalf("smembers: %v", err)
		}
		if len(deps) > 0 && s.where[id][0] != "waiting-children" && s.where[id][0] != "failed" {
			v = append(v, fmt.Sprintf("parent %s has %d pending children but is %v", id, len(deps), s.where[id]))
		}
		for _, dep := range deps {
			parentKey, err := rdb.HGet(ctx, dep, "parentKey").Result()
			switch {
			case err == redis.Nil:
				v = append(v, fmt.Sprintf("parent %s waits for %s, which is gone or names no parent", id, dep))
			case err != nil:
				t.Fatalf("hget: %v", err)
			case parentKey != s.k.Job(id):
				v = append(v, fmt.Sprintf("parent %s waits for %s, whose parent is %s", id, dep, parentKey))
			}
			if cid, ok := strings.CutPrefix(dep, s.k.Base()); ok {
				if w := s.where[cid]; len(w) == 1 && (w[0] == "completed" || w[0] == "failed") {
					v = append(v, fmt.Sprintf("parent %s still waits for %s, which is %s", id, cid, w[0]))
				}
			}
		}
		if pk := h["parentKey"]; pk != "" && strings.HasPrefix(pk, s.k.Base()) {
			pid := strings.TrimPrefix(pk, s.k.Base())
			child := s.k.Job(id)
			pending, err := rdb.SIsMember(ctx, s.k.Dependencies(pid), child).Result()
			if err != nil {
				t.Fatalf("sismember: %v", err)
			}
			processed, err := rdb.HExists(ctx, s.k.Processed(pid), child).Result()
			if err != nil {
				t.Fatalf("hexists: %v", err)
			}
			st := ""
			if w := s.where[id]; len(w) > 0 {
				st = w[0]
			}
			switch {
			case st == "completed" && !processed:
				v = append(v, fmt.Sprintf("child %s completed but parent %s has no result of it", id, pid))
			case st != "completed" && st != "failed" && !pending && s.hashes[pid] != nil:
				v = append(v, fmt.Sprintf("child %s is %s but parent %s does not wait for it", id, st, pid))
			}
		}
		if ok, err := rdb.Exists(ctx, s.k.Lock(id)).Result(); err != nil {
			t.Fatalf("exists: %v", err)
		} else if ok == 1 && s.where[id][0] != "active" {
			v = append(v, fmt.Sprintf("job %s is %v and still locked", id, s.where[id]))
		}
	}
	sort.Strings(v)
	return v
}
