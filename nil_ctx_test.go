package drover_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestNilContextIsRefused calls every exported method of Queue, Job,
// Worker (processing and manual), FlowProducer and QueueEvents that takes
// a context first and returns an error, with a nil context and zero values
// for the rest. Each must return an error wrapping ErrInvalidOption, never
// panic, and write nothing to Redis. Before, 54 of the 93 calls panicked (a nil
// pointer dereference in go-redis or drover's clock): Queue.Add, Pause,
// GetJob, Obliterate, Job.UpdateProgress, Log, QueueEvents.Next and more;
// FlowProducer.Add and Worker.Start did too (here zero arguments or an
// earlier Close stop them first).
func TestNilContextIsRefused(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()
	_, err := b.queue.Add(ctx, "x", 1, &drover.JobOptions{JobID: "s"})
	require.NoError(t, err)
	fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fp.Close() })
	manual, err := drover.NewWorker(b.rdb, "q", nil, &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	proc, err := drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return nil, nil
	}), &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	qe, err := drover.NewQueueEvents(b.rdb, "q", &drover.QueueEventsOptions{Prefix: b.prefix})
	require.NoError(t, err)
	before := rawState(t, b)

	var panicked, called []string
	for _, recv := range []struct {
		name string
		v    any
	}{
		{"Queue", b.queue}, {"Job", b.queue.Job("s")}, {"Worker", proc}, {"manual Worker", manual},
		{"FlowProducer", fp}, {"QueueEvents", qe},
	} {
		for _, c := range testkit.CallWithNilContext(recv.v, nil, nil) {
			name := recv.name + "." + c.Method
			if c.Panic != nil {
				panicked = append(panicked, name)
			}
			called = append(called, name)
			if !assert(t, c.Err != nil, "%s(nil ctx) returned no error", name) {
				continue
			}
			assert(t, errorsIsInvalidOption(c.Err), "%s(nil ctx): %v", name, c.Err)
		}
	}
	// The calls users make most, with valid arguments otherwise: the
	// context is what is refused.
	var nilCtx context.Context
	w, err := drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return nil, nil
	}), &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	for name, call := range map[string]func() error{
		"Queue.Add": func() error { _, err := b.queue.Add(nilCtx, "x", 1, nil); return err },
		"FlowProducer.Add": func() error {
			_, err := fp.Add(nilCtx, drover.FlowJob{Name: "p", QueueName: "q", Children: []drover.FlowJob{{Name: "c", QueueName: "q"}}})
			return err
		},
		"Worker.Start":       func() error { return w.Start(nilCtx) },
		"Job.UpdateProgress": func() error { return b.queue.Job("s").UpdateProgress(nilCtx, 50) },
		"Queue.UpsertJobScheduler": func() error {
			_, err := b.queue.UpsertJobScheduler(nilCtx, "tick", drover.RepeatOptions{Pattern: "* * * * *"}, nil)
			return err
		},
	} {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
					panicked = append(panicked, name)
				}
			}()
			return call()
		}()
		assert(t, errorsIsInvalidOption(err), "%s(nil ctx): %v", name, err)
		assert(t, err != nil && strings.Contains(err.Error(), "context.Context is nil"), "%s(nil ctx): %v", name, err)
	}
	require.Empty(t, panicked, "methods that panicked on a nil context")
	t.Logf("%d methods called", len(called))
	require.Greater(t, len(called), 60, "methods called: %v", called)
	require.Equal(t, before, rawState(t, b), "Redis untouched")
}

// rawState is every key under the bundle's prefix with its DUMP: any write
// changes it.
func rawState(t *testing.T, b *testBundle) map[string]string {
	t.Helper()
	raw, err := statedump.Raw(context.Background(), b.rdb, b.prefix+":*")
	require.NoError(t, err)
	return raw
}

// assert reports a failure without stopping the test, and whether ok.
func assert(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}

func errorsIsInvalidOption(err error) bool { return errors.Is(err, drover.ErrInvalidOption) }
