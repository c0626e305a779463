package outbox_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRelayStoresTheBytesQueueAddStores relays generated payloads (strings
// with '<', '>', '&', U+2028, U+2029, control characters, non-ASCII; floats
// in every notation; index-like map keys) and adds the same values with
// Queue.Add: the stored data must be byte-identical, so the outbox stores
// what Node would (Queue.Add's bytes are compared with Node's in
// internal/interoptest's TestCodecDataBytesMatchNode).
func TestRelayStoresTheBytesQueueAddStores(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	bundle := setupSQLite(t)
	r := rand.New(rand.NewPCG(7, 11))
	pieces := []string{"<", ">", "&", "\u2028", "\u2029", "\x01", "\t", "é", "😀", "</script>", "a", "\"", "\\", "/"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	floats := []float64{0.1, 1e21, 1e-7, 123456.789, 5e-324, 1.5, 100}
	const n = 50
	values := make([]any, n)
	jobs := make([]job, n)
	for i := range values {
		values[i] = map[string]any{
			"s": str(), "list": []any{str(), floats[r.IntN(len(floats))]},
			"10": str(), "9": floats[r.IntN(len(floats))], fmt.Sprint(r.IntN(3)): true,
		}
		jobs[i] = job{queue: "q", name: fmt.Sprint(i), data: values[i]}
	}
	bundle.add(t, jobs...)
	_, err := bundle.newRelay(t, nil).Flush(ctx)
	require.NoError(t, err)
	rows := bundle.rows(t)
	require.Len(t, rows, n)
	q := bundle.queue(t, "q")
	for i, row := range rows {
		relayed, err := q.GetJob(ctx, row.JobID)
		require.NoError(t, err)
		res, err := q.Add(ctx, "direct", values[i], nil)
		require.NoError(t, err)
		require.Equal(t, string(res.Job.Data), string(relayed.Data), "value %d: %#v", i, values[i])
		stored, err := bundle.rdb.HGet(ctx, bundle.prefix+":q:"+row.JobID, "data").Result()
		require.NoError(t, err)
		require.Equal(t, string(res.Job.Data), stored)
	}
}
