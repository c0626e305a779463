package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// startSentinel starts one sentinel (redis-server --sentinel) monitoring
// masterAddr as "mymaster", logging in to it with masterPass, and returns
// its address. The test owns the process.
func startSentinel(t *testing.T, masterAddr, masterPass string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "redis-server not found on PATH (make deps installs it)")
	host, port, err := net.SplitHostPort(masterAddr)
	require.NoError(t, err)
	sport, err := redistest.FreePort()
	require.NoError(t, err)
	dir := t.TempDir()
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster %s %s 1\n", sport, dir, host, port)
	if masterPass != "" {
		conf += "sentinel auth-pass mymaster " + masterPass + "\n"
	}
	path := filepath.Join(dir, "sentinel.conf")
	require.NoError(t, os.WriteFile(path, []byte(conf), 0o600))
	cmd := exec.Command(bin, path, "--sentinel")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sport))
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer sc.Close()
	require.Eventually(t, func() bool {
		_, err := sc.GetMasterAddrByName(context.Background(), "mymaster").Result()
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "sentinel at %s never answered", addr)
	return addr
}

// TestSentinelURLProblemsNamed: with a Sentinel URL (?master_name=), the
// CLI said neither why nor soon when it found no master. No sentinel
// listening: it redialled until --timeout ran out and said "ping redis:
// context deadline exceeded" (10 s; 35 s with --timeout 0). A master name
// the sentinels do not monitor: "all sentinels specified in configuration
// are unreachable: redis: nil", though they had answered. The master's
// password written as user:password@ (the sentinels' login in go-redis's
// URL) was "login refused ... set the user and password in --redis:
// redis://user:password@host:port/db", which is what the user had done.
func TestSentinelURLProblemsNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	require.NoError(t, srv.Client(t).ConfigSet(ctx, "requirepass", "sekret").Err())
	sentinel := startSentinel(t, srv.Addr, "sekret")
	dead, err := redistest.FreePort()
	require.NoError(t, err)
	deadAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(dead))

	run := func(url string) (string, error) {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"queues", "--redis", url, "--timeout", "30s"})
		return out.String(), err
	}

	// Said from the refused dial itself, not from --timeout running out
	// ("context deadline exceeded").
	_, err = run("redis://" + deadAddr + "/0?master_name=mymaster")
	require.ErrorContains(t, err, `cannot reach a sentinel for master "mymaster"`)
	require.ErrorContains(t, err, deadAddr+": dial tcp "+deadAddr+": connect: connection refused")

	_, err = run("redis://" + sentinel + "/0?master_name=nosuch&password=sekret")
	require.EqualError(t, err, `no master named "nosuch": the sentinels at `+sentinel+` monitor none of that name (master_name= in --redis or DROVER_REDIS_URL)`)

	// One sentinel down, the other knows no such master: both said.
	_, err = run("redis://" + deadAddr + "/0?master_name=nosuch&addr=" + sentinel)
	require.ErrorContains(t, err, "connection refused; and the sentinels at "+sentinel+" monitor no master of that name")

	_, err = run("redis://:sekret@" + sentinel + "/0?master_name=mymaster")
	require.ErrorContains(t, err, "login refused by Redis at master \"mymaster\" of the sentinels at "+sentinel)
	require.ErrorContains(t, err, "the master's login goes in the username= and password= parameters")

	out, err := run("redis://" + sentinel + "/0?master_name=mymaster&password=sekret")
	require.NoError(t, err, out)
}
