// Package queuecheck reads where every job of a quiet queue is (no worker,
// no producer running) and lists the invariants a fault must not break: each
// job in one state, no state naming a missing job, no job hash in no state,
// parents and children agreeing, no lock left on a job not active. The fault
// tests end with it.
package queuecheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/orphans"
)

// States is where each job of a queue is, read once the queue is
// quiet (no worker, no producer): the invariants a fault must not break.
type States struct {
	// Where maps each job id to the state sets that hold it ("wait",
	// "completed", ...): one, when all is well.
	Where map[string][]string
	// Hashes holds the job hash of each id Where names (empty: none).
	Hashes map[string]map[string]string

	k   keys.Queue
	rdb redis.UniversalClient
}

// Read reads every state set of the queue and the hash of each job they
// hold.
func Read(ctx context.Context, rdb redis.UniversalClient, prefix, name string) (*States, error) {
	k := keys.New(prefix, name)
	s := &States{k: k, Where: map[string][]string{}, Hashes: map[string]map[string]string{}, rdb: rdb}
	for state, key := range map[string]string{"wait": k.Wait(), "paused": k.Paused(), "active": k.Active()} {
		ids, err := rdb.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("lrange %s: %w", key, err)
		}
		for _, id := range ids {
			s.Where[id] = append(s.Where[id], state)
		}
	}
	for state, key := range map[string]string{"prioritized": k.Prioritized(), "delayed": k.Delayed(),
		"completed": k.Completed(), "failed": k.Failed(), "waiting-children": k.WaitingChildren()} {
		ids, err := rdb.ZRange(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("zrange %s: %w", key, err)
		}
		for _, id := range ids {
			s.Where[id] = append(s.Where[id], state)
		}
	}
	for id := range s.Where {
		h, err := rdb.HGetAll(ctx, k.Job(id)).Result()
		if err != nil {
			return nil, fmt.Errorf("hgetall %s: %w", id, err)
		}
		s.Hashes[id] = h
	}
	return s, nil
}

// In returns the ids held by state, sorted.
func (s *States) In(state string) []string {
	var out []string
	for id, w := range s.Where {
		for _, st := range w {
			if st == state {
				out = append(out, id)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Violations lists every broken invariant: a job in more than one state
// set (or twice in one), a state set naming a job with no hash, a job hash
// no state set holds (an orphan), a parent's pending dependency that is
// missing or does not name the parent, a child whose parent does not list
// it, a parent with pending children outside waiting-children, or a lock
// left on a job not active. The orphan search is BullMQ's removeOrphanedJobs
// (internal/orphans): it skips ids with a ':', so an orphaned job scheduler
// run ("repeat:<id>:<ms>") is not reported.
func (s *States) Violations(ctx context.Context) ([]string, error) {
	rdb := s.rdb
	var v []string
	for id, w := range s.Where {
		if len(w) != 1 {
			v = append(v, fmt.Sprintf("job %s is in %v", id, w))
		}
		if len(s.Hashes[id]) == 0 {
			v = append(v, fmt.Sprintf("job %s is in %v without a hash", id, w))
		}
	}
	n, err := orphans.Sweep(ctx, rdb, s.k, 0, 0, false, 0)
	if err != nil {
		return nil, fmt.Errorf("orphans: %w", err)
	}
	if n != 0 {
		v = append(v, fmt.Sprintf("%d job hashes in no state", n))
	}
	for id, h := range s.Hashes {
		deps, err := rdb.SMembers(ctx, s.k.Dependencies(id)).Result()
		if err != nil {
			return nil, fmt.Errorf("smembers: %w", err)
		}
		if len(deps) > 0 && s.Where[id][0] != "waiting-children" && s.Where[id][0] != "failed" {
			v = append(v, fmt.Sprintf("parent %s has %d pending children but is %v", id, len(deps), s.Where[id]))
		}
		for _, dep := range deps {
			parentKey, err := rdb.HGet(ctx, dep, "parentKey").Result()
			switch {
			case errors.Is(err, redis.Nil):
				v = append(v, fmt.Sprintf("parent %s waits for %s, which is gone or names no parent", id, dep))
			case err != nil:
				return nil, fmt.Errorf("hget: %w", err)
			case parentKey != s.k.Job(id):
				v = append(v, fmt.Sprintf("parent %s waits for %s, whose parent is %s", id, dep, parentKey))
			}
			if cid, ok := strings.CutPrefix(dep, s.k.Base()); ok {
				if w := s.Where[cid]; len(w) == 1 && (w[0] == "completed" || w[0] == "failed") {
					v = append(v, fmt.Sprintf("parent %s still waits for %s, which is %s", id, cid, w[0]))
				}
			}
		}
		if pk := h["parentKey"]; pk != "" && strings.HasPrefix(pk, s.k.Base()) {
			pid := strings.TrimPrefix(pk, s.k.Base())
			child := s.k.Job(id)
			pending, err := rdb.SIsMember(ctx, s.k.Dependencies(pid), child).Result()
			if err != nil {
				return nil, fmt.Errorf("sismember: %w", err)
			}
			processed, err := rdb.HExists(ctx, s.k.Processed(pid), child).Result()
			if err != nil {
				return nil, fmt.Errorf("hexists: %w", err)
			}
			st := ""
			if w := s.Where[id]; len(w) > 0 {
				st = w[0]
			}
			switch {
			case st == "completed" && !processed:
				v = append(v, fmt.Sprintf("child %s completed but parent %s has no result of it", id, pid))
			case st != "completed" && st != "failed" && !pending && s.Hashes[pid] != nil:
				v = append(v, fmt.Sprintf("child %s is %s but parent %s does not wait for it", id, st, pid))
			}
		}
		if ok, err := rdb.Exists(ctx, s.k.Lock(id)).Result(); err != nil {
			return nil, fmt.Errorf("exists: %w", err)
		} else if ok == 1 && s.Where[id][0] != "active" {
			v = append(v, fmt.Sprintf("job %s is %v and still locked", id, s.Where[id]))
		}
	}
	sort.Strings(v)
	return v, nil
}
