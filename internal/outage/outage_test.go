package outage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/outage"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// TestIs sorts errors from real clients: what a dead or unready server
// gives is an outage; what a wrong request gives, or a client its owner
// closed, is not.
func TestIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	require.NoError(t, rdb.Set(ctx, prefix+":s", "x", 0).Err())

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	closed := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr})
	require.NoError(t, closed.Close())
	stranger := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, Username: "no-such-user", Password: "x", MaxRetries: -1})
	t.Cleanup(func() { _ = stranger.Close() })
	slow, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	time.Sleep(2 * time.Millisecond)

	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nothing listens", dead.Ping(ctx).Err(), true},
		{"wrapped", fmt.Errorf("read events: %w", dead.Ping(ctx).Err()), true},
		{"connection lost", io.EOF, true},
		{"deadline passed", rdb.Ping(slow).Err(), true},
		{"pool exhausted", redis.ErrPoolTimeout, true},
		{"replica refuses a write", readOnlyReply(t), true},
		{"replicas late for min-replicas-to-write", noReplicasReply(t), true},
		{"RDB snapshot failed (disk full)", diskErrorReply(t), true},
		{"client closed by its owner", closed.Ping(ctx).Err(), false},
		{"wrong type", rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{prefix + ":s", "0"}, Count: 1}).Err(), false},
		{"unknown command", rdb.Do(ctx, "NOSUCHCOMMAND").Err(), false},
		{"wrong password", stranger.Ping(ctx).Err(), false},
		{"a script's own error", rdb.Eval(ctx, "return redis.error_reply('BAD input')", nil).Err(), false},
		{"nil", nil, false},
		{"not Redis at all", errors.New("boom"), false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, outage.Is(tt.err), "%s: %v", tt.name, tt.err)
	}
}

// readOnlyReply is the error a real replica answers to a write.
func readOnlyReply(t *testing.T) error {
	t.Helper()
	ctx := context.Background()
	err := redistest.Shared(t).Replica(t).Client(t).Set(ctx, "k", "v", 0).Err()
	require.ErrorContains(t, err, "READONLY")
	return err
}

// noReplicasReply is the error a real master configured with
// min-replicas-to-write answers to a write while too few replicas follow
// it.
func noReplicasReply(t *testing.T) error {
	t.Helper()
	ctx := context.Background()
	srv, err := redistest.Start("--min-replicas-to-write", "1")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	err = srv.Client(t).Set(ctx, "k", "v", 0).Err()
	require.ErrorContains(t, err, "NOREPLICAS")
	return err
}

// diskErrorReply is the error a real server answers to a write after its
// RDB snapshot failed (stop-writes-on-bgsave-error, the default): here its
// directory is removed before BGSAVE, as a full or lost disk would fail it.
func diskErrorReply(t *testing.T) error {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir() + "/data"
	require.NoError(t, os.Mkdir(dir, 0o700))
	srv, err := redistest.Start("--dir", dir, "--save", "3600 1")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := srv.Client(t)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, rdb.BgSave(ctx).Err())
	require.Eventually(t, func() bool {
		info, err := rdb.Info(ctx, "persistence").Result()
		return err == nil && strings.Contains(info, "rdb_last_bgsave_status:err")
	}, 10*time.Second, 10*time.Millisecond, "BGSAVE to fail")
	err = rdb.Set(ctx, "k", "v", 0).Err()
	require.ErrorContains(t, err, "MISCONF")
	return err
}

// scriptReply is an error reply as go-redis hands one over, for the forms
// of Redis versions this machine does not run (Redis 6.2 wraps the reply a
// script's command met in its own ERR).
type scriptReply string

func (e scriptReply) Error() string { return string(e) }
func (scriptReply) RedisError()     {}

// TestReplyCode reads the code of an error reply, the one a script's
// command met included, in Redis 7's form (passed through) and in Redis
// 6.2's (wrapped in "ERR Error running script"). Before ReplyCode, the
// wrapped form's code was "ERR" for every one: an OOM or READONLY a script
// met on 6.2 counted as a final error, not an outage, and a bulk add was
// not resent after a failover.
func TestReplyCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	require.NoError(t, rdb.Set(ctx, prefix+":s", "x", 0).Err())
	const wrapped = "ERR Error running script (call to f_6b1bf486c81ceb7edf3c093f4c48582e38c0e791): @user_script:5: "
	tests := []struct {
		name   string
		err    error
		code   string
		outage bool
	}{
		{"7.0: a script met WRONGTYPE", rdb.Eval(ctx, "return redis.call('LPUSH', KEYS[1], 'x')", []string{prefix + ":s"}).Err(), "WRONGTYPE", false},
		{"7.0: a script's own error", rdb.Eval(ctx, "return redis.error_reply('BAD input')", nil).Err(), "BAD", false},
		{"6.2: a script met OOM", scriptReply(wrapped + "-OOM command not allowed when used memory > 'maxmemory'."), "OOM", true},
		{"6.2: a script met READONLY, no dash", scriptReply(wrapped + "READONLY You can't write against a read only replica."), "READONLY", true},
		{"6.2: a script met MISCONF", scriptReply(wrapped + "@user_script: 5: -MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk."), "MISCONF", true},
		{"6.2: a script met WRONGTYPE", scriptReply(wrapped + "-WRONGTYPE Operation against a key holding the wrong kind of value"), "WRONGTYPE", false},
		{"6.2: a script's Lua error", scriptReply(wrapped + "attempt to call a nil value (global 'nope')"), "ERR", false},
		{"not a reply", errors.New("OOM"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.code, outage.ReplyCode(tt.err), "%v", tt.err)
			require.Equal(t, tt.outage, outage.Is(tt.err), "%v", tt.err)
		})
	}
}
