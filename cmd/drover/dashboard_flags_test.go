package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestDashboardBeyondLoopbackWithoutUsers: `drover dashboard --addr
// 0.0.0.0:7373` without --token or --user connected to Redis first, then
// exited 1 with the server's refusal, which named its Go option
// ("configure users (Options.Auth, ...)"). It is a usage error (exit 2)
// now, said in the CLI's terms before Redis is opened (an unreachable
// --redis does not hide it), and it still matches dashboard.ErrInsecureBind.
func TestDashboardBeyondLoopbackWithoutUsers(t *testing.T) {
	t.Parallel()
	for _, extra := range [][]string{nil, {"--anonymous-role", "viewer"}} {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(context.Background(), append([]string{"dashboard",
			"--addr", "0.0.0.0:0", "--redis", "redis://127.0.0.1:1/0"}, extra...))
		require.Equal(t, 2, exitCode(err), "%q: %v", extra, err)
		require.ErrorIs(t, err, dashboard.ErrInsecureBind)
		require.ErrorContains(t, err, "give --token or --user")
		require.NotContains(t, err.Error(), "Options.Auth")
	}
}
