package interoptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestOptionsRefusalsMatchNode: job options (BullMQ's public JSON, as
// drover add --opts and ParseJobOptions take them) that Node BullMQ 6.7's
// Queue.add throws on (job.js validateOptions, queue.js addJob) are refused
// by drover too, as ErrInvalidOption, ErrInvalidJobID or ErrInvalidData,
// with Redis untouched on drover's side. drover refuses more on purpose
// (refuse: drover): values BullMQ stores but cannot mean (a negative delay
// or attempts, fractions where it counts whole units, numbers past what it
// stores exactly, wrong JSON types, keys it does not know), and a backoff
// type no worker of the queue registers. Each row pins which side refuses.
func TestOptionsRefusalsMatchNode(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	d := b.sibling(t)
	ctx := context.Background()
	const both, droverOnly, neither = "both", "drover", "neither"
	for _, tt := range []struct {
		opts   string
		refuse string
	}{
		{`{"priority":1.5}`, both},
		{`{"priority":"3"}`, both},
		{`{"priority":2097152}`, both},
		{`{"priority":2097151}`, neither},
		{`{"priority":-1}`, droverOnly},
		{`{"backoff":{"type":"fixed","jitter":1.5}}`, both},
		{`{"backoff":{"type":"fixed","jitter":-0.1}}`, both},
		{`{"backoff":{"type":"fixed","jitter":"x"}}`, droverOnly},
		{`{"deduplication":{"ttl":5}}`, both},
		{`{"deduplication":{"id":""}}`, both},
		{`{"deduplication":{"id":5}}`, droverOnly},
		{`{"deduplication":{"id":"x","ttl":-1}}`, droverOnly},
		{`{"debounce":{"id":"x"}}`, both},
		{`{"debounce":null}`, both},
		{`{"failParentOnFailure":true,"ignoreDependencyOnFailure":true}`, both},
		{`{"failParentOnFailure":true,"continueParentOnFailure":true}`, both},
		{`{"removeDependencyOnFailure":true,"failParentOnFailure":false}`, neither},
		{`{"jobId":"0"}`, both},
		{`{"jobId":"0:x"}`, both},
		{`{"jobId":"12"}`, both},
		{`{"jobId":"a:b"}`, both},
		{`{"jobId":5}`, both},
		{`{"jobId":""}`, neither},
		{`{"jobId":"a:b:c"}`, neither},
		{`{"sizeLimit":1}`, both},
		{`{"sizeLimit":-1}`, both},
		{`{"parent":{"id":"x","queue":"bull:q"}}`, both},
		{`{"delay":-5}`, droverOnly},
		{`{"delay":1.5}`, droverOnly},
		{`{"delay":"5"}`, droverOnly},
		{`{"attempts":-1}`, droverOnly},
		{`{"attempts":1.5}`, droverOnly},
		{`{"keepLogs":-1}`, droverOnly},
		{`{"timestamp":-1}`, droverOnly},
		{`{"stackTraceLimit":-5}`, droverOnly},
		{`{"removeOnComplete":-5}`, neither},
		{`{"removeOnComplete":{"age":-1}}`, droverOnly},
		{`{"removeOnComplete":"yes"}`, droverOnly},
		{`{"removeOnFail":1.5}`, droverOnly},
		{`{"backoff":{"type":"nope"}}`, droverOnly},
		{`{"backoff":-1}`, droverOnly},
		{`{"backoff":{"delay":5}}`, droverOnly},
		{`{"backoff":{"type":"fixed","delay":-5}}`, droverOnly},
		{`{"lifo":"yes"}`, droverOnly},
		{`{"timeout":-5}`, droverOnly},
		{`{"timeout":0.5}`, droverOnly},
		{`{"repeat":{"every":1000}}`, droverOnly},
		{`{"prevMillis":5}`, droverOnly},
		{`{"telemetry":{"metadata":5}}`, droverOnly},
	} {
		var opts map[string]any
		require.NoError(t, json.Unmarshal([]byte(tt.opts), &opts))
		data := map[string]any{"a": 1}
		_, nodeErr := b.oracle.Add(ctx, b.prefix, queueName, "n", data, opts)
		var ne *bullmqoracle.NodeError
		if nodeErr != nil && !errors.As(nodeErr, &ne) {
			require.NoError(t, nodeErr, "%s: the oracle failed", tt.opts)
		}
		before, err := statedump.Dump(ctx, d.rdb, d.prefix)
		require.NoError(t, err)
		o, droverErr := drover.ParseJobOptions([]byte(tt.opts))
		if droverErr == nil {
			_, droverErr = d.dq.Add(ctx, "d", data, o)
		}
		got := neither
		switch {
		case nodeErr != nil && droverErr != nil:
			got = both
		case droverErr != nil:
			got = droverOnly
		case nodeErr != nil:
			got = "node"
		}
		require.Equal(t, tt.refuse, got, "%s: node %v; drover %v", tt.opts, nodeErr, droverErr)
		if droverErr != nil {
			require.True(t, errors.Is(droverErr, drover.ErrInvalidOption) || errors.Is(droverErr, drover.ErrInvalidJobID) ||
				errors.Is(droverErr, drover.ErrInvalidData), "%s: %v", tt.opts, droverErr)
			after, err := statedump.Dump(ctx, d.rdb, d.prefix)
			require.NoError(t, err)
			require.Empty(t, statedump.Diff(before, after), "%s: drover refused but wrote", tt.opts)
		}
	}
}
