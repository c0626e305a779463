package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestQueuesOnAManagedRedis: `drover add` and `drover queues` as a user
// without @dangerous and without SCAN (CONFIG renamed away): the added
// queues are listed, and stderr says once why a queue only Node producers
// write would not be. The listing failed with SCAN's NOPERM ("no queues"
// once another listing had published an empty list), and said nothing.
func TestQueuesOnAManagedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--rename-command", "CONFIG", "")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	require.NoError(t, srv.Client(t).Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-@dangerous", "-scan").Err())
	url := "redis://app:pw@" + srv.Addr
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		m := Main{Stdout: &out, Stderr: &errOut}
		err := m.Run(ctx, append(args, "--redis", url))
		return out.String(), errOut.String(), err
	}
	out, _, err := run("queues")
	require.NoError(t, err, out)
	for _, q := range []string{"mail", "billing"} {
		out, stderr, err := run("add", q, "send")
		require.NoError(t, err, "%s%s", out, stderr)
	}
	out, stderr, err := run("queues")
	require.NoError(t, err, "%s%s", out, stderr)
	require.Contains(t, out, "mail")
	require.Contains(t, out, "billing")
	require.Equal(t, 1, strings.Count(stderr, "Redis refuses SCAN"), stderr)
}

// TestQueuesAsAReadOnlyUser: `drover queues` and `drover jobs` as a user
// that may read and run scripts but not write (+@read +@scripting
// -@write) work, and print no warning: each listing warned twice that it
// could not keep the queues it found ("publish discovered queues", "seed
// the queue registry": NOPERM). A user granted +@read alone is told which
// grant its reads need, since every read is a script.
func TestQueuesAsAReadOnlyUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "ro", "on", ">pw", "~*", "&*", "+@read", "+@scripting", "+@connection", "-@write").Err())
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "plain", "on", ">pw", "~*", "&*", "+@read", "+@connection").Err())
	run := func(user string, args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		m := Main{Stdout: &out, Stderr: &errOut}
		err := m.Run(ctx, append(args, "--redis", "redis://"+user+":pw@"+srv.Addr))
		return out.String(), errOut.String(), err
	}
	out, stderr, err := run("default", "add", "mail", "send")
	require.NoError(t, err, "%s%s", out, stderr)

	for _, args := range [][]string{{"queues"}, {"jobs", "mail", "--state", "waiting"}} {
		out, stderr, err = run("ro", args...)
		require.NoError(t, err, "%s%s", out, stderr)
		require.Contains(t, out, "mail")
		require.Empty(t, stderr, "%v", args)
	}
	_, _, err = run("plain", "jobs", "mail")
	require.ErrorContains(t, err, "NOPERM")
	require.ErrorContains(t, err, "grant this Redis user +@scripting")
}
