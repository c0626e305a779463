package inspect_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestNilContextIsRefused calls every exported method of the Inspector
// that takes a context first and returns an error, with a nil context,
// "q" (a queue that exists) for each string and zero values for the rest.
// Each must return an error wrapping drover.ErrInvalidOption, never panic,
// and write nothing to Redis. Before, 37 of the 41 panicked (a nil pointer
// dereference in go-redis): Queues, Overview, Jobs, Pause, Clean, RetryJobs,
// Obliterate and more; the dashboard and the CLI always pass a context,
// a program using the package may not.
func TestNilContextIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	b.add(t, "q", "x", &drover.JobOptions{JobID: "s"})
	before := dumpAll(t, b)

	queueName := func(t reflect.Type) reflect.Value {
		if t.Kind() == reflect.String {
			return reflect.ValueOf("q").Convert(t)
		}
		return reflect.Value{}
	}
	var panicked, called []string
	for _, c := range testkit.CallWithNilContext(b.ins, func(m string) bool { return m == "Close" }, queueName) {
		if c.Panic != nil {
			panicked = append(panicked, c.Method)
		}
		called = append(called, c.Method)
		assert.ErrorIs(t, c.Err, drover.ErrInvalidOption, c.Method)
	}
	require.Empty(t, panicked, "methods that panicked on a nil context")
	t.Logf("%d methods called", len(called))
	require.Greater(t, len(called), 30, "methods called: %v", called)
	// Close with a nil context is refused too, and the Inspector still works.
	require.ErrorIs(t, b.ins.Close(nil), drover.ErrInvalidOption) //nolint:staticcheck // the nil context is the test
	require.Equal(t, before, dumpAll(t, b), "Redis untouched")
	_, err := b.ins.Queues(ctx)
	require.NoError(t, err)
}

// dumpAll is every key under the bundle's prefix with its DUMP: any write
// changes it.
func dumpAll(t *testing.T, b *testBundle) map[string]string {
	t.Helper()
	raw, err := statedump.Raw(context.Background(), b.rdb, b.prefix+":*")
	require.NoError(t, err)
	return raw
}
