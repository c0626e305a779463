package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestEveryCommandHelp: `drover <command> -h` and `--help` print the
// command's usage on stdout and succeed, for every command an operator
// finds in `drover help`, and a flag the command does not have is a usage
// error (exit code 2) that names it.
func TestEveryCommandHelp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, sub := range []string{"upsert", "remove"} {
		var out bytes.Buffer
		require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"scheduler", sub, "-h"}))
		require.Contains(t, out.String(), "Usage: drover scheduler "+sub)
	}
	for _, name := range names {
		if name == "lab" {
			continue // only in -tags lab builds; TestLab covers it
		}
		for _, help := range []string{"-h", "--help"} {
			var out, errOut bytes.Buffer
			err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, []string{name, help})
			require.NoError(t, err, "drover %s %s: %s", name, help, errOut.String())
			require.Contains(t, out.String(), "Usage: drover "+name, "drover %s %s", name, help)
		}
		args := []string{name, "--no-such-flag"}
		if name == "scheduler" {
			args = []string{name, "upsert", "--no-such-flag"}
		}
		var out, errOut bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, args)
		var ue *usageError
		require.True(t, errors.As(err, &ue), "drover %s --no-such-flag: a usage error (exit 2), got %v", name, err)
		require.Contains(t, err.Error(), "no-such-flag", name)
	}
}

// TestRetryRefusesBadNumbers: a negative --limit or --chunk is a usage
// error that names the flag, and no job moves. It was "invalid option:
// inspect.RetryOptions.ChunkSize and Limit must not be negative, got 100
// and -5", naming Go fields the operator never set, with exit code 1.
func TestRetryRefusesBadNumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	res, err := q.Add(ctx, "send", nil, nil)
	require.NoError(t, err)
	require.NoError(t, rdb.ZAdd(ctx, prefix+":mail:failed", redis.Z{Score: 1, Member: res.Job.ID}).Err())
	require.NoError(t, rdb.LRem(ctx, prefix+":mail:wait", 0, res.Job.ID).Err())
	for _, tc := range []struct{ flag, value string }{{"--limit", "-5"}, {"--chunk", "-1"}} {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"retry", "mail", tc.flag, tc.value,
			"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix})
		var ue *usageError
		require.True(t, errors.As(err, &ue), "%s %s: a usage error (exit 2), got %v", tc.flag, tc.value, err)
		require.Contains(t, err.Error(), tc.flag)
		state, err := q.GetJobState(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateFailed, state, "nothing moved")
	}
}

// TestJobsRefusesUnknownState: `drover jobs --state bogus` is a usage
// error (exit 2) naming the states, found before Redis is dialled; it was
// an error with exit code 1.
func TestJobsRefusesUnknownState(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := (&Main{Stdout: &out, Stderr: &errOut}).Run(context.Background(), []string{"jobs", "--state", "bogus", "--redis", "redis://127.0.0.1:1"})
	var ue *usageError
	require.True(t, errors.As(err, &ue), "a usage error (exit 2), got %v", err)
	require.ErrorContains(t, err, `--state "bogus": want waiting, prioritized`)
}

// TestRetryAndCleanRefuseUnknownState: `drover retry --state bogus` and
// `drover clean --state bogus` are usage errors (exit 2) naming the states
// each takes, found before Redis is dialled. retry said "invalid option:
// inspect.RetryOptions.State must be ...", a Go name, with exit code 1;
// clean dialled Redis and answered about the queue instead.
func TestRetryAndCleanRefuseUnknownState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cmd, want string }{
		{"retry", `--state "bogus": want failed or completed`},
		{"clean", `--state "bogus": want completed, failed, delayed`},
	} {
		var out, errOut bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(context.Background(), []string{tc.cmd, "q", "--state", "bogus", "--redis", "redis://127.0.0.1:1"})
		var ue *usageError
		require.True(t, errors.As(err, &ue), "%s: a usage error (exit 2), got %v", tc.cmd, err)
		require.ErrorContains(t, err, tc.want, tc.cmd)
	}
}

// TestHelpCommand: `drover help <command>` prints that command's usage, as
// `drover <command> -h` does, and an unknown command or extra words are a
// usage error (exit code 2) naming them. Before, `drover help anything`
// printed the command list and exited 0, so `drover help retyr` looked
// fine and `drover help retry` never showed retry's flags. `drover` alone
// is a usage error too (the list on stderr, exit 2); it printed the list
// on stdout and exited 0.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		out  string // in stdout on success
		err  string // in the usage error
	}{
		{args: nil, err: "no command given"},
		{args: []string{"help"}, out: "Usage: drover <command>"},
		{args: []string{"help", "retry"}, out: "Usage: drover retry"},
		{args: []string{"help", "scheduler"}, out: "Usage: drover scheduler"},
		{args: []string{"help", "retyr"}, err: `unknown command "retyr"`},
		{args: []string{"help", "retry", "extra"}, err: `help takes one <command>, got ["retry" "extra"]`},
	} {
		var out, errOut bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, c.args)
		if c.err == "" {
			require.NoError(t, err, "%q", c.args)
			require.Contains(t, out.String(), c.out, "%q", c.args)
			continue
		}
		var ue *usageError
		require.True(t, errors.As(err, &ue), "%q: a usage error (exit 2), got %v", c.args, err)
		require.ErrorContains(t, err, c.err, "%q", c.args)
		require.Empty(t, out.String(), "%q: nothing on stdout", c.args)
	}
}

// TestExitStatusAsDocumented: the exit codes were documented nowhere
// (`drover help`, the README); scripts had to guess which of 1 and 2 meant
// what. `drover help` now ends with them, and the commands keep to it: a
// usage error (exit 2) for a bad flag, a missing argument and a
// destructive command without --yes off a terminal; a plain error (exit
// 1) for an unknown queue or job and an unreachable Redis; no error (exit
// 0) for a question answered no.
func TestExitStatusAsDocumented(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var help bytes.Buffer
	require.NoError(t, (&Main{Stdout: &help, Stderr: &help}).Run(ctx, []string{"help"}))
	for _, s := range []string{"Exit status:", "\n  0  done", "\n  1  the command failed", "\n  2  a usage error", "\n130 stopped by Ctrl-C before it finished", "a second\n    Ctrl-C while stopping"} {
		require.Contains(t, help.String(), s)
	}
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	here := []string{"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}
	for _, tc := range []struct {
		args        []string
		interactive bool
		code        int
	}{
		{[]string{"jobs", "q", "--bogus"}, false, 2},
		{[]string{"remove", "q"}, false, 2},
		{[]string{"drain", "q"}, false, 2},
		{[]string{"jobs", "nosuch"}, false, 1},
		{[]string{"job", "q", "nosuch"}, false, 1},
		{[]string{"drain", "q"}, true, 0},
	} {
		var out bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &out, Stdin: strings.NewReader("n\n"), Interactive: tc.interactive}
		err := m.Run(ctx, append(tc.args, here...))
		require.Equal(t, tc.code, exitCode(err), "%q: %v %s", tc.args, err, out.String())
	}
	var out bytes.Buffer
	err = (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"queues", "--redis", "redis://127.0.0.1:1/0"})
	require.Equal(t, 1, exitCode(err), "Redis unreachable: %v", err)
	n, err := q.GetJobCounts(ctx, drover.StateWaiting)
	require.NoError(t, err)
	require.Equal(t, int64(1), n[drover.StateWaiting], "the drain answered no changed nothing")
}

// TestRetryIDsRefuseBulkFlags: `drover retry <queue> <id>` took --limit,
// --chunk, --pause, --progress and --include-unrecoverable and ignored
// them (the job was retried as if they were not given); only --dry-run and
// --filter were refused, after connecting. Each is now a usage error
// naming the flags, found before Redis is opened, and the job stays
// failed.
func TestRetryIDsRefuseBulkFlags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	res, err := q.Add(ctx, "send", nil, nil)
	require.NoError(t, err)
	require.NoError(t, rdb.ZAdd(ctx, prefix+":mail:failed", redis.Z{Score: 1, Member: res.Job.ID}).Err())
	require.NoError(t, rdb.LRem(ctx, prefix+":mail:wait", 0, res.Job.ID).Err())
	for _, flags := range [][]string{
		{"--limit", "3"}, {"--chunk", "5"}, {"--pause", "1s"}, {"--progress"}, {"--include-unrecoverable"},
		{"--dry-run"}, {"--filter", "name=send"},
	} {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append([]string{"retry", "mail", res.Job.ID,
			"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}, flags...))
		require.Equal(t, 2, exitCode(err), "%q: %v %s", flags, err, out.String())
		require.ErrorContains(t, err, flags[0])
		state, err := q.GetJobState(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateFailed, state, "%q: nothing moved", flags)
	}
}
