// Package keytype names the key behind a WRONGTYPE reply. Redis says only
// "WRONGTYPE Operation against a key holding the wrong kind of value" (and,
// from a script, its sha and line), not which key: a read of a queue whose
// wait list another program overwrote with a string failed with that text
// alone. Explain asks Redis for the types of the queue's keys (and of the
// job hashes read) once such a reply came, and says which key holds what.
package keytype

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/outage"
)

// Error is a read refused because a key holds another kind of value than
// BullMQ keeps there. It unwraps to Redis's WRONGTYPE reply.
type Error struct {
	// Key is the key of the wrong type, Got its type and Want the type
	// BullMQ keeps there.
	Key, Got, Want string
	// Job is true for a job's hash, false for a queue key.
	Job bool
	err error
}

func (e *Error) Error() string {
	what := "queue key"
	if e.Job {
		what = "job key"
	}
	return fmt.Sprintf("%s %s holds a %s, not a %s (written by another program?; Redis answered WRONGTYPE)", what, e.Key, e.Got, e.Want)
}

func (e *Error) Unwrap() error { return e.err }

// queueKeys are the queue's keys with the type BullMQ and drover keep
// there (internal/scripts/lua/include/keytypes.lua checks the same).
func queueKeys(k keys.Queue) [][2]string {
	return [][2]string{
		{k.Wait(), "list"}, {k.Active(), "list"}, {k.Prioritized(), "zset"}, {k.Delayed(), "zset"},
		{k.Completed(), "zset"}, {k.Failed(), "zset"}, {k.Paused(), "list"}, {k.WaitingChildren(), "zset"},
		{k.Events(), "stream"}, {k.Meta(), "hash"}, {k.Marker(), "zset"}, {k.PriorityCounter(), "string"},
		{k.ID(), "string"}, {k.Stalled(), "set"}, {k.StalledCheck(), "string"}, {k.Limiter(), "string"},
		{k.Repeat(), "zset"},
	}
}

// Explain returns err unchanged unless it is Redis's WRONGTYPE reply; then
// it looks up the types of k's queue keys and of the hashes of jobIDs, in
// one pipeline that changes nothing, and returns an *Error naming the first
// key of another type (a job's hash before the queue's keys), wrapping err. When none is found (the key was set
// back meanwhile, or the lookup failed) err is returned as it is.
func Explain(ctx context.Context, rdb redis.Cmdable, k keys.Queue, err error, jobIDs ...string) error {
	if outage.ReplyCode(err) != "WRONGTYPE" {
		return err
	}
	// The job hashes first: a read of jobs fails on them before any
	// queue key it may also touch.
	want := make([][2]string, 0, len(jobIDs)+17)
	for _, id := range jobIDs {
		want = append(want, [2]string{k.Job(id), "hash"})
	}
	want = append(want, queueKeys(k)...)
	types := make([]*redis.StatusCmd, len(want))
	if _, perr := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range want {
			types[i] = p.Type(ctx, w[0])
		}
		return nil
	}); perr != nil {
		return err
	}
	for i, w := range want {
		if t := types[i].Val(); t != "none" && t != w[1] {
			return &Error{Key: w[0], Got: t, Want: w[1], Job: i < len(jobIDs), err: err}
		}
	}
	return err
}
