package drover_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestAddBulkPartialWriteIsReported: a real redis-server runs out of memory
// (maxmemory, noeviction) in the middle of an AddBulk. The chunks stored
// before are reported in an *AddBulkError with their results, the refused
// chunk is known not to be stored, and Redis holds exactly the reported jobs,
// so a caller can resend the rest without duplicating anything.
func TestAddBulkPartialWriteIsReported(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, &drover.QueueOptions{AddBulkChunk: 250}, "--maxmemory-policy", "noeviction")
	ctx := context.Background()

	info, err := rdb.Info(ctx, "memory").Result()
	require.NoError(t, err)
	used := infoInt(t, info, "used_memory")
	// Room for roughly half of 2,000 jobs of 1 KB.
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+1200*1024, 10)).Err())

	jobs := make([]drover.BulkJob, 2000)
	for i := range jobs {
		jobs[i] = drover.BulkJob{Name: "j", Data: map[string]string{"pad": strings.Repeat("x", 1000)}}
	}
	res, err := q.AddBulk(ctx, jobs)
	require.Error(t, err)
	require.Nil(t, res)
	var be *drover.AddBulkError
	require.True(t, errors.As(err, &be), "a partial write is a typed error, got %v", err)
	require.ErrorContains(t, err, "OOM")
	require.Equal(t, 2000, be.Total)
	require.Zero(t, be.Unknown, "Redis refused the chunk: nothing of it is stored")
	require.Greater(t, len(be.Results), 0, "some chunks fit")
	require.Less(t, len(be.Results), 2000)
	require.Zero(t, len(be.Results)%250, "whole chunks are stored or not")
	stored := rdb.LLen(ctx, "bull:q:wait").Val()
	require.Equal(t, int64(len(be.Results)), stored, "Redis holds exactly the reported jobs")
	for _, r := range be.Results {
		require.Equal(t, drover.AddCreated, r.Outcome)
	}

	// With memory back, resending the rest stores them once: 2,000 in all.
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())
	rest, err := q.AddBulk(ctx, jobs[len(be.Results):])
	require.NoError(t, err)
	require.Len(t, rest, 2000-len(be.Results))
	require.Equal(t, int64(2000), rdb.LLen(ctx, "bull:q:wait").Val())
}

func infoInt(t *testing.T, info, field string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("INFO has no %s", field)
	return 0
}
