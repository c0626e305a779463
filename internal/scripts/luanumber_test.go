package scripts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestLuaNumberTextIsLuaTostring holds LuaNumberText to the Lua of the
// Redis server the scripts run in: tostring of the number Redis hands a
// script for an integer reply (INCRBY's), at the values where its
// 14-digit format starts and near 2^53.
func TestLuaNumberTextIsLuaTostring(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Client(t)
	ctx := context.Background()
	for _, n := range []int64{0, 1, 42, 99_999_999_999_999, 100_000_000_000_000, 100_000_000_000_001, 123_456_789_012_345,
		999_999_999_999_995, 1_000_000_000_000_000, 9_007_199_254_740_991, 9_007_199_254_740_993, -5, -100_000_000_000_000} {
		got, err := rdb.Eval(ctx, `return tostring(tonumber(ARGV[1]))`, nil, n).Text()
		require.NoError(t, err)
		require.Equal(t, got, LuaNumberText(n), "%d", n)
	}
}
