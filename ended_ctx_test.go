package drover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestAddUnderAnEndedContextStoresNothing: an add whose ctx has ended
// before the call (cancelled, or a deadline already past) returns ctx's
// error, not one saying the jobs may be stored, and stores nothing. Before,
// Add sent its batch anyway (the send is detached from the caller's ctx):
// the job was stored and Add returned nil or ErrAddInDoubt; AddBulk and
// FlowProducer.Add stored nothing but said they might have.
func TestAddUnderAnEndedContextStoresNothing(t *testing.T) {
	b := setupQueue(t)
	fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	flow := drover.FlowJob{Name: "parent", QueueName: b.name, Children: []drover.FlowJob{{Name: "child", QueueName: b.name}}}
	calls := map[string]func(ctx context.Context) error{
		"Add":     func(ctx context.Context) error { _, err := b.queue.Add(ctx, "a", 1, nil); return err },
		"AddArgs": func(ctx context.Context) error { _, err := b.queue.AddArgs(ctx, endedCtxArgs{N: 1}, nil); return err },
		"AddBulk/1": func(ctx context.Context) error {
			_, err := b.queue.AddBulk(ctx, []drover.BulkJob{{Name: "a"}})
			return err
		},
		"AddBulk/2": func(ctx context.Context) error {
			_, err := b.queue.AddBulk(ctx, []drover.BulkJob{{Name: "a"}, {Name: "b"}})
			return err
		},
		"FlowProducer.Add":     func(ctx context.Context) error { _, err := fp.Add(ctx, flow); return err },
		"FlowProducer.AddBulk": func(ctx context.Context) error { _, err := fp.AddBulk(ctx, []drover.FlowJob{flow}); return err },
	}
	ends := map[string]func() (context.Context, error){
		"cancelled": func() (context.Context, error) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, context.Canceled
		},
		"deadline passed": func() (context.Context, error) {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx, context.DeadlineExceeded
		},
	}
	before, err := statedump.Dump(context.Background(), b.rdb, b.prefix)
	require.NoError(t, err)
	for callName, call := range calls {
		for endName, end := range ends {
			t.Run(callName+"/"+endName, func(t *testing.T) {
				ctx, want := end()
				err := call(ctx)
				require.ErrorIs(t, err, want)
				require.False(t, errors.Is(err, drover.ErrOutcomeUnknown), "an add never sent is not in doubt: %v", err)
				// A wrongly sent add runs in a goroutine of its own: give
				// it time to reach Redis before looking.
				deadline := time.Now().Add(time.Second)
				for time.Now().Before(deadline) {
					after, err := statedump.Dump(context.Background(), b.rdb, b.prefix)
					require.NoError(t, err)
					require.Empty(t, statedump.Diff(before, after), "Redis changed")
					time.Sleep(50 * time.Millisecond)
				}
			})
		}
	}
}

type endedCtxArgs struct{ N int }

func (endedCtxArgs) Kind() string { return "ended-ctx" }

// TestWritesUnderAnEndedContextAreNotInDoubt: an admin write whose ctx has
// ended before the call sends nothing, and says so: its error is ctx's,
// not ErrOutcomeUnknown ("the write may have happened"), which before
// every one of these returned, Redis untouched all the same.
func TestWritesUnderAnEndedContextAreNotInDoubt(t *testing.T) {
	b := setupQueue(t)
	ctx := context.Background()
	for _, id := range []string{"w1", "w2"} {
		_, err := b.queue.Add(ctx, "w", 1, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
	}
	_, err := b.queue.Add(ctx, "d", 1, &drover.JobOptions{JobID: "d1", Delay: time.Hour})
	require.NoError(t, err)
	_, err = b.queue.UpsertJobScheduler(ctx, "s1", drover.RepeatOptions{Every: time.Hour}, nil)
	require.NoError(t, err)
	q := b.queue
	calls := map[string]func(ctx context.Context) error{
		"Job.Remove":         func(ctx context.Context) error { return q.Job("w1").Remove(ctx, nil) },
		"Job.Promote":        func(ctx context.Context) error { return q.Job("d1").Promote(ctx) },
		"Job.ChangeDelay":    func(ctx context.Context) error { return q.Job("d1").ChangeDelay(ctx, time.Minute) },
		"Job.ChangePriority": func(ctx context.Context) error { return q.Job("w1").ChangePriority(ctx, 3, false) },
		"Job.Retry":          func(ctx context.Context) error { return q.Job("w1").Retry(ctx, drover.StateFailed, nil) },
		"UpsertJobScheduler": func(ctx context.Context) error {
			_, err := q.UpsertJobScheduler(ctx, "s2", drover.RepeatOptions{Every: time.Hour}, nil)
			return err
		},
		"Pause":                func(ctx context.Context) error { return q.Pause(ctx) },
		"Resume":               func(ctx context.Context) error { return q.Resume(ctx) },
		"Drain":                func(ctx context.Context) error { _, err := q.Drain(ctx, true); return err },
		"Clean":                func(ctx context.Context) error { _, err := q.Clean(ctx, 0, 0, drover.StateWaiting); return err },
		"Obliterate":           func(ctx context.Context) error { return q.Obliterate(ctx, nil) },
		"SetGlobalConcurrency": func(ctx context.Context) error { return q.SetGlobalConcurrency(ctx, 3) },
		"SetGlobalRateLimit":   func(ctx context.Context) error { return q.SetGlobalRateLimit(ctx, 3, time.Second) },
		"RateLimit":            func(ctx context.Context) error { return q.RateLimit(ctx, time.Second) },
		"PromoteJobs":          func(ctx context.Context) error { _, err := q.PromoteJobs(ctx, 10); return err },
		"PromoteEarliest":      func(ctx context.Context) error { _, err := q.PromoteEarliest(ctx, 10); return err },
		"SetEventsMaxLen":      func(ctx context.Context) error { return q.SetEventsMaxLen(ctx, 10) },
		"TrimEvents":           func(ctx context.Context) error { return q.TrimEvents(ctx, 1) },
		"RetryJobs":            func(ctx context.Context) error { _, err := q.RetryJobs(ctx, nil); return err },
	}
	before, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			for _, ended := range []struct {
				ctx  func() context.Context
				want error
			}{
				{func() context.Context { c, cancel := context.WithCancel(ctx); cancel(); return c }, context.Canceled},
				{func() context.Context {
					c, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
					t.Cleanup(cancel)
					return c
				}, context.DeadlineExceeded},
			} {
				err := call(ended.ctx())
				require.ErrorIs(t, err, ended.want)
				require.False(t, errors.Is(err, drover.ErrOutcomeUnknown), "a write never sent is not in doubt: %v", err)
				after, err := statedump.Dump(ctx, b.rdb, b.prefix)
				require.NoError(t, err)
				require.Empty(t, statedump.Diff(before, after), "Redis changed")
			}
		})
	}
}
