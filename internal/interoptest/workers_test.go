package interoptest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestWorkersListedOnBothSides runs a named Node worker, a named drover
// worker and an unnamed drover worker on one queue: Node's
// Queue.getWorkers()/getWorkersCount() and drover's Queue.GetWorkers list
// the same three connections, and a closed drover worker leaves both lists.
func TestWorkersListedOnBothSides(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()

	b.startWorker(t, nodeImpl, workerSpec{name: "node-w"})
	stopNamed := b.startWorker(t, droverImpl, workerSpec{name: "drover-w"})
	unnamed, err := drover.NewWorker(b.rdb, queueName, droverBehavior(bullmqoracle.Behavior{}, b.rdb), &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	require.NoError(t, unnamed.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, unnamed.Close(cctx))
	})

	// lists returns the connection names each side lists, sorted.
	lists := func() (node, drv []string) {
		nws, err := b.oracle.GetWorkers(ctx, b.prefix, queueName)
		require.NoError(t, err)
		for _, w := range nws {
			require.Equal(t, queueName, w["name"])
			node = append(node, w["rawname"])
		}
		dws, err := b.dq.GetWorkers(ctx)
		require.NoError(t, err)
		for _, w := range dws {
			drv = append(drv, w.ClientName)
			require.NotEmpty(t, w.Addr)
			require.NotZero(t, w.ClientID)
		}
		slices.Sort(node)
		slices.Sort(drv)
		return node, drv
	}
	base := b.prefix + ":cQ==" // base64("q")
	want := []string{base, base + ":w:drover-w", base + ":w:node-w"}
	testkit.WaitFor(t, waitLong, "three workers listed on both sides", func() bool {
		node, drv := lists()
		return slices.Equal(node, want) && slices.Equal(drv, want)
	})
	n, err := b.oracle.GetWorkersCount(ctx, b.prefix, queueName)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	dws, err := b.dq.GetWorkers(ctx)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, w := range dws {
		names[w.Name] = true
	}
	require.Equal(t, map[string]bool{"": true, "drover-w": true, "node-w": true}, names)

	stopNamed()
	want = []string{base, base + ":w:node-w"}
	testkit.WaitFor(t, waitLong, "the closed drover worker gone from both lists", func() bool {
		node, drv := lists()
		return slices.Equal(node, want) && slices.Equal(drv, want)
	})
	n, err = b.dq.GetWorkersCount(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

// TestWorkersIdleOrBusy: the workers view (inspect.Workers, behind the
// dashboard's workers page and `drover workers`) says idle while a worker
// waits for jobs and busy while it runs one, for a Node and a drover worker
// alike (both wait on their named connection; a drover worker used to wait
// on another one and was shown busy all the time, and a Node worker running
// a job was shown idle because its last command was bzpopmin).
func TestWorkersIdleOrBusy(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	gate := b.prefix + ":gate"
	hold := bullmqoracle.WaitKey(gate, bullmqoracle.Return("done"))
	b.startWorker(t, nodeImpl, workerSpec{name: "node-w", behavior: hold})
	b.startWorker(t, droverImpl, workerSpec{name: "drover-w", behavior: hold})
	ins, err := inspect.New(b.rdb, &inspect.Options{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(ctx) })
	waiting := func() map[string]bool {
		ws, err := ins.Workers(ctx, queueName)
		require.NoError(t, err)
		m := map[string]bool{}
		for _, w := range ws {
			m[w.Name] = w.Waiting
		}
		return m
	}
	testkit.WaitFor(t, waitLong, "both workers idle", func() bool {
		m := waiting()
		return len(m) == 2 && m["node-w"] && m["drover-w"]
	})
	b.add(t, nodeImpl, jobSpec{name: "a"})
	b.add(t, nodeImpl, jobSpec{name: "b"})
	testkit.WaitFor(t, waitLong, "both workers busy", func() bool {
		m := waiting()
		return len(m) == 2 && !m["node-w"] && !m["drover-w"]
	})
	// Both stay busy while they hold their job.
	for range 5 {
		m := waiting()
		require.False(t, m["node-w"] || m["drover-w"], "a worker running a job shown idle: %v", m)
	}
	require.NoError(t, b.rdb.Set(ctx, gate, "1", 0).Err())
	testkit.WaitFor(t, waitLong, "both workers idle again", func() bool {
		m := waiting()
		return len(m) == 2 && m["node-w"] && m["drover-w"]
	})
}
