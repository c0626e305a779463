package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWrongPasswordSaysTheLoginWasRefused: a wrong or missing password
// said "cannot reach Redis at ...", sending the operator after the network
// when Redis had answered and refused the login. The error now says Redis
// refused the credentials and where to set them, and keeps Redis's answer.
func TestWrongPasswordSaysTheLoginWasRefused(t *testing.T) {
	t.Parallel()
	// Its own server: the password is set once it answers (the testkit's
	// readiness probe logs in as nobody).
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	require.NoError(t, srv.Client(t).ConfigSet(ctx, "requirepass", "sekret").Err())
	for _, tc := range []struct{ url, answer string }{
		{"redis://:wrong@" + srv.Addr + "/0", "WRONGPASS"},
		{"redis://" + srv.Addr + "/0", "NOAUTH"},
	} {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"queues", "--redis", tc.url})
		require.Error(t, err)
		require.NotContains(t, err.Error(), "cannot reach", tc.url)
		require.Contains(t, err.Error(), "login refused by Redis at "+srv.Addr+" (db 0)", tc.url)
		require.Contains(t, err.Error(), tc.answer, tc.url)
		require.NotContains(t, err.Error(), "wrong", "the password is not printed")
	}
	var out bytes.Buffer
	require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"queues", "--redis", "redis://:sekret@" + srv.Addr + "/0"}), out.String())
}

// TestNoSuchDatabaseSaysSo: --redis naming a database past the server's
// `databases` setting said "cannot reach Redis at ... (db 99 ...): ping
// redis: ERR DB index is out of range", sending the operator after the
// network when Redis had answered. The error now says the server has no
// such database. The demo's --for is a nanosecond: its clock ran during
// the connect check, so a --for shorter than the connect (1 ms on a
// loaded CI machine) said "cannot reach Redis ...: context deadline
// exceeded"; it starts once Redis is open now.
func TestNoSuchDatabaseSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := redistest.Shared(t).Addr
	for _, args := range [][]string{{"queues"}, {"demo", "--for", "1ns", "--dashboard", "off"}} {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args, "--redis", "redis://"+addr+"/99"))
		require.Error(t, err, args)
		require.NotContains(t, err.Error(), "cannot reach", args)
		require.Contains(t, err.Error(), "database 99 does not exist on Redis at "+addr, args)
	}
}
