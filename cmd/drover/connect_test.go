package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestRedisFlag: --redis takes a URL or a bare host:port (as redis-cli and
// most clients do; it was refused: "first path segment in URL cannot
// contain colon"); anything else is refused naming both forms.
func TestRedisFlag(t *testing.T) {
	t.Parallel()
	addr := redistest.Shared(t).Addr
	_, prefix := redistest.Client(t)
	for _, tc := range []struct {
		redis, err string
	}{
		{redis: addr},
		{redis: "redis://" + addr + "/0"},
		{redis: "localhost", err: `--redis "localhost": want a redis:// or rediss:// URL, or host:port`},
		{redis: "http://" + addr, err: `invalid URL scheme`},
	} {
		var out bytes.Buffer
		m := Main{Stdout: &out, Stderr: &out}
		err := m.Run(context.Background(), []string{"queues", "--redis", tc.redis, "--prefix", prefix})
		if tc.err == "" {
			require.NoError(t, err, tc.redis)
			continue
		}
		require.ErrorContains(t, err, tc.err, tc.redis)
	}
}

// TestDurationFlags: the operator duration flags (scheduler --every, clean
// --grace, retry --pause) take a Go duration or, as BullMQ's options do,
// a number of milliseconds; --every 1000 was refused ("parse error").
func TestDurationFlags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) (string, error) { return runCLI(ctx, t, prefix, args...) }
	_, err := run("scheduler", "upsert", "q", "ms", "--every", "1500")
	require.NoError(t, err)
	_, err = run("scheduler", "upsert", "q", "go", "--every", "2s")
	require.NoError(t, err)
	for id, want := range map[string]string{"ms": "1500", "go": "2000"} {
		every, err := rdb.HGet(ctx, prefix+":q:repeat:"+id, "every").Result()
		require.NoError(t, err, id)
		require.Equal(t, want, every, id)
	}
	_, err = run("scheduler", "upsert", "q", "bad", "--every", "1x")
	require.ErrorContains(t, err, "want a duration such as 30s or 1m30s, or a number of milliseconds")
	out, err := run("clean", "q", "--grace", "60000", "--dry-run")
	require.NoError(t, err, out)
}

// runCLI runs the drover command args against the shared test Redis under
// prefix and returns what it printed.
func runCLI(ctx context.Context, t *testing.T, prefix string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	m := Main{Stdout: &out, Stderr: &out}
	err := m.Run(ctx, append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
	return out.String(), err
}
