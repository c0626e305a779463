package scripts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestScoresAgreeWithLua runs include/score.lua on a real redis-server and
// compares every function with its Go half in internal/keys.
func TestScoresAgreeWithLua(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Client(t)
	ctx := context.Background()
	lua := Source("include/score") + `
local out = {}
for i = 1, #ARGV, 3 do
  local due, seq, prio = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local score = delayedScoreOf(due, seq)
  out[#out + 1] = string.format("%.0f", score)
  out[#out + 1] = string.format("%.0f", dueOfScore(score))
  out[#out + 1] = string.format("%.0f", priorityScoreOf(prio, seq + 4294967296 * 3))
end
return out`
	cases := []struct {
		due, seq int64
		prio     int
	}{
		{0, 0, 0},
		{1, 4095, 1},
		{1_764_547_200_123, 17, 2_097_151},
		{1_764_547_200_123, 4095, 7},
		{2_100_000_000_000, 1, 1}, // 2036; scores are exact below 2^53 only, as in BullMQ
	}
	var args []any
	var want []string
	for _, c := range cases {
		args = append(args, c.due, c.seq, c.prio)
		score := keys.DelayedScore(c.due, c.seq)
		want = append(want, fmtInt(score), fmtInt(keys.DueOfScore(float64(score))),
			fmtInt(keys.PriorityScore(c.prio, c.seq+keys.PriorityBand*3)))
		require.Equal(t, c.due, keys.DueOfScore(float64(score)))
	}
	got, err := rdb.Eval(ctx, lua, nil, args...).StringSlice()
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func fmtInt(n int64) string { return str(n) }
