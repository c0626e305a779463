package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestDemoRefusesBadFlags: `drover demo --dashboard 0.0.0.0:7373` (or an
// address that is no address) says why it will not serve there, and
// `--for -1s` is a usage error. The first two served on a random loopback
// port instead, saying nothing about the address asked for (the fallback
// meant for a taken port took every error); the third ran until Ctrl-C.
// A taken port still falls back to a free one. A non-loopback or
// malformed --dashboard and a --queue that is no queue name (or the
// demo's second queue) are usage errors found before the engine starts.
func TestDemoRefusesBadFlags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	demo := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append([]string{"demo", "--for", "2s"}, args...))
		return out.String(), err
	}
	out, err := demo("--dashboard", "0.0.0.0:0")
	require.ErrorIs(t, err, dashboard.ErrInsecureBind, out)
	require.ErrorContains(t, err, "--dashboard")
	require.NotContains(t, out, "dashboard: http://", "no dashboard elsewhere")
	// The demo has no --token or --user: the dashboard's own error named
	// them as the way out. A usage error (exit 2) now, before the engine
	// starts.
	require.Equal(t, 2, exitCode(err), "%v", err)
	require.ErrorContains(t, err, "loopback only")
	require.NotContains(t, out, "embedded", "refused before the engine starts")

	out, err = demo("--dashboard", "no-port")
	require.ErrorContains(t, err, `--dashboard "no-port"`, out)
	require.NotContains(t, out, "dashboard: http://")
	require.Equal(t, 2, exitCode(err), "%v", err)

	out, err = demo("--for", "-1s")
	var usage *usageError
	require.ErrorAs(t, err, &usage, out)
	require.ErrorContains(t, err, "--for")

	// A queue name no queue can have exited 1 after the engine started;
	// the stalling worker's queue ran both workers on one queue, every
	// event printed twice.
	for _, name := range []string{"a:b", "", "imports"} {
		out, err = demo("--queue", name)
		require.Equal(t, 2, exitCode(err), "--queue %q: %v", name, err)
		require.ErrorContains(t, err, "--queue", name)
		require.NotContains(t, out, "embedded", "--queue %q: refused before the engine starts", name)
	}

	// A taken port: the demo serves on another one and says where.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	start := time.Now()
	out, err = demo("--dashboard", taken.Addr().String())
	require.NoError(t, err, out)
	require.Contains(t, out, "dashboard: http://127.0.0.1:")
	require.False(t, strings.Contains(out, "dashboard: http://"+taken.Addr().String()), out)
	t.Logf("ran %s", time.Since(start).Round(time.Millisecond))
}
