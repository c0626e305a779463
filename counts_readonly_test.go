package drover_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCountsOfAReadOnlyUser: counting drops a pre-v5 marker at the tail of
// wait as BullMQ's getCounts does, a write; a Redis user without write
// rights (a read-only dashboard, say) still gets the counts, with the
// marker left out of them and left in place.
func TestCountsOfAReadOnlyUser(t *testing.T) {
	t.Parallel()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	admin := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "reader", "on", ">pw", "~*", "&*", "+@read", "+@scripting", "-@write").Err())
	require.NoError(t, admin.RPush(ctx, "bull:q:wait", "j2", "j1", "0:0").Err())
	reader := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "reader", Password: "pw"})
	t.Cleanup(func() { _ = reader.Close() })
	require.Error(t, reader.Set(ctx, "x", "1", 0).Err(), "the reader can write")
	q, err := drover.NewQueue(reader, "q", nil)
	require.NoError(t, err)
	counts, err := q.GetJobCounts(ctx, drover.StateWaiting)
	require.NoError(t, err)
	require.EqualValues(t, 2, counts[drover.StateWaiting])
	wait, err := admin.LRange(ctx, "bull:q:wait", 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{"j2", "j1", "0:0"}, wait)
}

// TestReadsOfAUserWithoutScripts: a "read-only" Redis user granted +@read
// alone (the access string managed services suggest) may not run EVALSHA,
// and every drover read is a script, as BullMQ's are. The reply named the
// command only; the error now says which grant helps, and stays a Redis
// NOPERM reply for errors.As.
func TestReadsOfAUserWithoutScripts(t *testing.T) {
	t.Parallel()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	admin := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "plainreader", "on", ">pw", "~*", "&*", "+@read", "+@connection").Err())
	reader := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "plainreader", Password: "pw"})
	t.Cleanup(func() { _ = reader.Close() })
	q, err := drover.NewQueue(reader, "q", nil)
	require.NoError(t, err)
	_, err = q.GetJobCounts(ctx, drover.StateWaiting)
	require.ErrorContains(t, err, "NOPERM")
	require.ErrorContains(t, err, "grant this Redis user +@scripting, or +evalsha +eval")
	var reply redis.Error
	require.ErrorAs(t, err, &reply)
	require.True(t, strings.HasPrefix(reply.Error(), "NOPERM"), reply.Error())
	_, err = q.GetJobState(ctx, "1")
	require.ErrorContains(t, err, "grant this Redis user +@scripting")
}
