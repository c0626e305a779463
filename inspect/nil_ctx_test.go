package inspect_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
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

	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	v := reflect.ValueOf(b.ins)
	var panicked, called []string
	for i := range v.NumMethod() {
		m, name := v.Method(i), v.Type().Method(i).Name
		ft := m.Type()
		if ft.NumIn() == 0 || ft.In(0) != ctxType || ft.NumOut() == 0 || ft.Out(ft.NumOut()-1) != errType || name == "Close" {
			continue
		}
		args := []reflect.Value{reflect.Zero(ctxType)}
		for a := 1; a < ft.NumIn(); a++ {
			if ft.In(a).Kind() == reflect.String {
				args = append(args, reflect.ValueOf("q").Convert(ft.In(a)))
				continue
			}
			args = append(args, reflect.Zero(ft.In(a)))
		}
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
					panicked = append(panicked, name)
				}
			}()
			var out []reflect.Value
			if ft.IsVariadic() {
				out = m.CallSlice(args)
			} else {
				out = m.Call(args)
			}
			err, _ = out[len(out)-1].Interface().(error)
			return err
		}()
		called = append(called, name)
		assert.ErrorIs(t, err, drover.ErrInvalidOption, name)
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

// dumpAll is every key under the bundle's prefix with its DUMP.
func dumpAll(t *testing.T, b *testBundle) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	iter := b.rdb.Scan(ctx, 0, b.prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		d, err := b.rdb.Dump(ctx, iter.Val()).Result()
		require.NoError(t, err)
		out[iter.Val()] = d
	}
	require.NoError(t, iter.Err())
	return out
}
