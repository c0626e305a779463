package interoptest_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// codecSeed fixes the generated inputs of the codec differential tests; a
// failure prints the input, so a seed is reproducible by rerunning.
const codecSeed = 20261201

// droverOnlyIDRule reports the custom ids drover refuses on purpose although
// BullMQ accepts them: "." and ".." (no URL can carry them, so no dashboard
// could show the job) and ids that would overwrite a queue key.
func droverOnlyIDRule(id string) bool {
	switch id {
	case ".", "..", "wait", "active", "prioritized", "delayed", "completed", "failed", "paused",
		"waiting-children", "events", "meta", "marker", "pc", "id", "stalled", "stalled-check",
		"limiter", "repeat", "metrics", "priority", "delay":
		return true
	}
	for _, p := range []string{"de:", "dn:", "metrics:", "marker:"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// genJobIDs returns ids around BullMQ's rules: integer-looking strings of
// every length (parseInt's rounding starts past 2^53, exponent rendering at
// 1e21), leading zeros and signs, colons, dots and random mixes.
func genJobIDs(r *rand.Rand, n int) []string {
	digits := func(k int) string {
		var b strings.Builder
		for range k {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	ids := []string{"0", "-0", "00", "007", "1", "-5", "+5", " 5", "5 ", "1e3", "0x10", "1.0", "1234567890123456",
		"100000000000000000000", "1000000000000000000000", "9007199254740993", "12345678901234567",
		"999999999999999999999", "-100000000000000000000", ".", "..", "a:b", "a:b:c", "a:b:c:d", "0:x", "x:0:y"}
	for k := 1; k <= 25; k++ {
		d := digits(k)
		nz := strings.TrimLeft(d, "0")
		if nz == "" {
			nz = "1"
		}
		ids = append(ids, nz, "-"+nz, "0"+nz, nz+"0", "1"+strings.Repeat("0", k))
	}
	const alphabet = "0123456789-+.:eE x/%é"
	for range n {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(string([]rune(alphabet)[r.IntN(len([]rune(alphabet)))]))
		}
		ids = append(ids, b.String())
	}
	seen := map[string]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// TestCodecJobIDsMatchNode adds generated custom ids with Node BullMQ and
// with drover: each side must accept exactly the ids the other accepts,
// except droverOnlyIDRule's, and an accepted id must be the job's id.
func TestCodecJobIDsMatchNode(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	d := b.sibling(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(codecSeed, 1))
	ids := genJobIDs(r, 300)
	var accepted, refused int
	for _, id := range ids {
		nodeID, nodeErr := b.oracle.Add(ctx, b.prefix, queueName, "n", map[string]any{}, map[string]any{"jobId": id})
		var ne *bullmqoracle.NodeError
		if nodeErr != nil && !errors.As(nodeErr, &ne) {
			require.NoError(t, nodeErr)
		}
		if nodeErr != nil && strings.HasPrefix(ne.Message, "Unknown code ") {
			// BullMQ stores the job, then reads the id the script returns as
			// a negative error code (its `result < 0` coerces "-4.5" or
			// "-0123" to a number) and throws. The job is stored: accepted.
			n, err := b.rdb.Exists(ctx, b.prefix+":"+queueName+":"+id).Result()
			require.NoError(t, err)
			require.EqualValues(t, 1, n, "id %q: node threw %v without storing the job", id, nodeErr)
			nodeErr, nodeID = nil, id
		}
		res, droverErr := d.dq.Add(ctx, "d", nil, &drover.JobOptions{JobID: id})
		if droverErr != nil {
			require.ErrorIs(t, droverErr, drover.ErrInvalidJobID, "id %q", id)
			require.Contains(t, droverErr.Error(), strconv.Quote(id), "the error names the id")
		}
		if droverOnlyIDRule(id) {
			require.Error(t, droverErr, "drover refuses %q on purpose", id)
			continue
		}
		require.Equal(t, nodeErr == nil, droverErr == nil,
			"id %q: node err %v, drover err %v", id, nodeErr, droverErr)
		if nodeErr == nil {
			accepted++
			require.Equal(t, id, nodeID)
			require.Equal(t, id, res.Job.ID)
		} else {
			refused++
		}
	}
	t.Logf("%d ids: %d accepted, %d refused by both", len(ids), accepted, refused)
}
