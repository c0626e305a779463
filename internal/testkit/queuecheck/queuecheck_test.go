package queuecheck_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// TestViolations: each broken invariant written straight into Redis is
// reported, and a consistent queue reports none.
func TestViolations(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	k := keys.New(prefix, "q")
	job := func(id string, fields ...any) {
		require.NoError(t, rdb.HSet(ctx, k.Job(id), append([]any{"name", "x", "timestamp", 1}, fields...)...).Err())
	}
	job("ok")
	require.NoError(t, rdb.RPush(ctx, k.Wait(), "ok").Err())
	s, err := queuecheck.Read(ctx, rdb, prefix, "q")
	require.NoError(t, err)
	v, err := s.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.Equal(t, []string{"ok"}, s.In("wait"))

	job("twice")
	require.NoError(t, rdb.RPush(ctx, k.Wait(), "twice").Err())
	require.NoError(t, rdb.ZAdd(ctx, k.Completed(), redisZ(1, "twice")).Err())
	require.NoError(t, rdb.ZAdd(ctx, k.Delayed(), redisZ(1, "nohash")).Err())
	job("orphan")
	job("parent")
	require.NoError(t, rdb.RPush(ctx, k.Wait(), "parent").Err())
	require.NoError(t, rdb.SAdd(ctx, k.Dependencies("parent"), k.Job("gone")).Err())
	job("locked")
	require.NoError(t, rdb.ZAdd(ctx, k.Completed(), redisZ(1, "locked")).Err())
	require.NoError(t, rdb.Set(ctx, k.Lock("locked"), "tok", 0).Err())
	s, err = queuecheck.Read(ctx, rdb, prefix, "q")
	require.NoError(t, err)
	v, err = s.Violations(ctx)
	require.NoError(t, err)
	require.Len(t, v, 6, "%q", v)
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
