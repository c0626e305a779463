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
