package main

import (
	"bytes"
	"context"
	"path/filepath"
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
		{redis: "localhost", err: `--redis "localhost": want a redis://, rediss:// or unix:// URL, or host:port`},
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

// TestRedisFlagSocketsAndPorts: a unix:// URL reaches a server on its
// socket, a bare socket path is refused naming the unix:// form (it said
// "want a redis:// or rediss:// URL, or host:port", never naming the form
// that works), and a port past 65535 or 0 is a usage error (exit 2)
// before any dial: it was "cannot reach Redis at 127.0.0.1:99999 ...
// invalid port", exit 1, as if the network had failed.
func TestRedisFlagSocketsAndPorts(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "redis.sock")
	srv, err := redistest.Start("--unixsocket", sock)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	run := func(url string) (string, error) {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(context.Background(), []string{"queues", "--redis", url})
		return out.String(), err
	}
	out, err := run("unix://" + sock)
	require.NoError(t, err, out)
	require.Contains(t, out, "no queues under prefix")
	_, err = run(sock)
	require.EqualError(t, err, `--redis "`+sock+`": want unix://`+sock+` for a Unix socket (redis://, rediss:// and unix:// URLs, or host:port)`)
	require.Equal(t, 2, exitCode(err))
	for _, url := range []string{"redis://127.0.0.1:99999", "127.0.0.1:0", "rediss://127.0.0.1:70000/0"} {
		_, err = run(url)
		require.ErrorContains(t, err, "is not a TCP port (1-65535)", url)
		require.Equal(t, 2, exitCode(err), url)
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
