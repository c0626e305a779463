package bullmqoracle_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestReferenceDump records, in the test log, the Redis state Node BullMQ
// leaves after adding a plain, a delayed, a prioritized and a LIFO job, and
// after a worker processed them: the reference the drover engine must
// reproduce. Run `go test -run TestReferenceDump -v ./internal/testkit/bullmqoracle`
// to read it.
func TestReferenceDump(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	// addFour adds the four reference jobs and returns their ids.
	addFour := func(t *testing.T, b *testBundle) []string {
		t.Helper()
		ctx := context.Background()
		var ids []string
		for _, j := range []struct {
			name string
			opts map[string]any
		}{
			{"plain", nil},
			{"delayed", map[string]any{"delay": 300}},
			{"prioritized", map[string]any{"priority": 2}},
			{"lifo", map[string]any{"lifo": true, "attempts": 2, "backoff": 1000}},
		} {
			id, err := b.oracle.Add(ctx, b.prefix, b.queue, j.name, map[string]any{"job": j.name, "path": "a/b"}, j.opts)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		return ids
	}

	t.Run("AfterAdd", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		ids := addFour(t, b)
		require.Equal(t, []string{"1", "2", "3", "4"}, ids)

		raw, err := statedump.Dump(ctx, b.rdb, b.prefix)
		require.NoError(t, err)
		t.Logf("Node BullMQ %s state after adding plain, delayed, prioritized, LIFO (raw):\n%s", bullmqoracle.Version(), raw)
		norm, err := statedump.Normalize(raw, nil)
		require.NoError(t, err)
		t.Logf("normalized:\n%s", norm)

		// The structure the drover engine has to reproduce.
		require.Equal(t, []string{
			"q:1", "q:2", "q:3", "q:4", "q:delayed", "q:events", "q:id", "q:marker",
			"q:meta", "q:pc", "q:prioritized", "q:wait",
		}, raw.Names())
		require.Equal(t, []string{"1", "4"}, raw.Keys["q:wait"].List, "LPUSH plain, RPUSH lifo")
		require.Equal(t, []statedump.ZMember{{Member: "3", Score: strconv.Itoa(2<<32 + 1)}}, raw.Keys["q:prioritized"].ZSet)
		require.Equal(t, "1", raw.Keys["q:pc"].String)
		require.Equal(t, "4", raw.Keys["q:id"].String)
		ts, err := strconv.ParseInt(raw.Keys["q:2"].Hash["timestamp"], 10, 64)
		require.NoError(t, err)
		require.Equal(t, []statedump.ZMember{{Member: "2", Score: statedump.FormatScore(float64(keys.DelayedScore(ts+300, 0)))}}, raw.Keys["q:delayed"].ZSet)
		require.Equal(t, map[string]string{"version": "bullmq:" + bullmqoracle.Version(), "opts.maxLenEvents": "10000"}, raw.Keys["q:meta"].Hash)
		require.Equal(t, `{"attempts":2,"backoff":{"delay":1000,"type":"fixed"},"lifo":true}`, normalizeJSON(t, raw.Keys["q:4"].Hash["opts"]))

		var events []string
		for _, e := range norm.Keys["q:events"].Stream {
			events = append(events, statedumpFields(e))
		}
		require.Equal(t, []string{
			`event=added jobId=1 name=plain`, `event=waiting jobId=1`,
			`event=added jobId=2 name=delayed`, `event=delayed jobId=2 delay=<ts>`,
			`event=added jobId=3 name=prioritized`, `event=waiting jobId=3`,
			`event=added jobId=4 name=lifo`, `event=waiting jobId=4`,
		}, events)

		// The same scenario under another prefix normalizes to the same state.
		b2 := setup(t)
		addFour(t, b2)
		raw2, err := statedump.Dump(ctx, b2.rdb, b2.prefix)
		require.NoError(t, err)
		norm2, err := statedump.Normalize(raw2, nil)
		require.NoError(t, err)
		require.Empty(t, statedump.Diff(norm, norm2))
	})

	t.Run("AfterProcessing", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		ids := addFour(t, b)
		require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, b.queue, bullmqoracle.WorkerOptions{
			ID: b.prefix + "-w", Name: "ref-worker", Behavior: bullmqoracle.Echo(),
		}))
		_, err := b.oracle.WaitWorkerEvents(ctx, b.prefix+"-w", len(ids), waitLong, "completed")
		require.NoError(t, err)
		require.NoError(t, b.oracle.StopWorker(ctx, b.prefix+"-w", false))

		raw, err := statedump.Dump(ctx, b.rdb, b.prefix)
		require.NoError(t, err)
		t.Logf("Node BullMQ %s state after an echo worker processed them (raw):\n%s", bullmqoracle.Version(), raw)
		norm, err := statedump.Normalize(raw, &statedump.NormalizeOptions{DelayedScores: statedump.ScoreOrder})
		require.NoError(t, err)
		t.Logf("normalized:\n%s", norm)

		completed := raw.Keys["q:completed"].ZSet
		require.Len(t, completed, 4)
		var order []string
		for _, z := range completed {
			order = append(order, z.Member)
		}
		// wait is taken from the right (LIFO first), then FIFO, then
		// prioritized; the delayed job, due 300 ms after its add, last,
		// unless the worker (slow to start on a loaded machine) took the
		// prioritized job after it was due: then it waited at priority 0,
		// ahead of the prioritized job.
		require.Equal(t, []string{"4", "1"}, order[:2], "completion order by finishedOn")
		added2, err := strconv.ParseInt(raw.Keys["q:2"].Hash["timestamp"], 10, 64)
		require.NoError(t, err)
		taken3, err := strconv.ParseInt(raw.Keys["q:3"].Hash["processedOn"], 10, 64)
		require.NoError(t, err)
		if taken3 < added2+300 {
			require.Equal(t, []string{"3", "2"}, order[2:], "completion order by finishedOn")
		} else {
			require.ElementsMatch(t, []string{"3", "2"}, order[2:])
		}
		for _, id := range ids {
			h := raw.Keys["q:"+id].Hash
			require.Equal(t, "1", h["atm"], "job %s", id)
			require.Equal(t, "1", h["ats"], "job %s", id)
			require.Equal(t, "ref-worker", h["pb"], "job %s", id)
			require.JSONEq(t, h["data"], h["returnvalue"], "job %s", id)
			require.NotEmpty(t, h["processedOn"])
			require.NotEmpty(t, h["finishedOn"])
		}
		require.Equal(t, "0", raw.Keys["q:2"].Hash["delay"], "promotion resets delay")
		for _, gone := range []string{"q:wait", "q:active", "q:delayed", "q:prioritized", "q:pc"} {
			require.NotContains(t, raw.Keys, gone)
		}
	})
}

func statedumpFields(e statedump.StreamEntry) string {
	s := ""
	for i := 0; i+1 < len(e.Fields); i += 2 {
		if s != "" {
			s += " "
		}
		s += e.Fields[i] + "=" + e.Fields[i+1]
	}
	return s
}

// normalizeJSON re-encodes a JSON text the way statedump.Normalize does.
func normalizeJSON(t *testing.T, s string) string {
	t.Helper()
	n, err := statedump.Normalize(&statedump.Snapshot{Prefix: "x", Keys: map[string]*statedump.Key{
		"k": {Type: statedump.TypeString, String: s},
	}}, nil)
	require.NoError(t, err)
	return n.Keys["k"].String
}
