package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestJobsNextPageRepeatsTheListingsFlags: the "next page: drover jobs ..."
// command a page ends with said only --state and --after. Pasted, a
// --filter listing went on with every job of the state, an --asc listing
// went on newest first from the cursor ("the list moved", and jobs shown
// again), and --limit and --prefix were dropped. The command now repeats
// them, and following it pages through exactly the listing asked for.
func TestJobsNextPageRepeatsTheListingsFlags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	var sends []string
	for i := range 7 {
		name := "other"
		if i%2 == 0 {
			name = "send"
		}
		res, err := q.Add(ctx, name, nil, &drover.JobOptions{Delay: time.Duration(i+1) * time.Hour})
		require.NoError(t, err)
		if name == "send" {
			sends = append(sends, res.Job.ID)
		}
	}
	here := []string{"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}
	nextRe := regexp.MustCompile(`(?m)^mail: next page: drover (.*)$`)
	// follow lists every page, following each page's printed command, and
	// returns the ids in the order shown.
	follow := func(args ...string) []string {
		var ids []string
		for range 10 {
			var out bytes.Buffer
			require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, args), out.String())
			for _, line := range strings.Split(out.String(), "\n") {
				if f := strings.Fields(line); len(f) > 2 && f[0] == "mail" {
					ids = append(ids, f[1])
				}
			}
			m := nextRe.FindStringSubmatch(out.String())
			if m == nil {
				return ids
			}
			args = shellSplit(t, m[1])
		}
		t.Fatal("more than 10 pages")
		return nil
	}
	// Soonest due first, 2 a page, only the "send" jobs.
	got := follow(append([]string{"jobs", "mail", "--state", "delayed", "--asc", "--limit", "2", "--filter", "name=send"}, here...)...)
	require.Equal(t, sends, got)
	// Newest first (the default), 3 a page.
	got = follow(append([]string{"jobs", "mail", "--state", "delayed", "--limit", "3"}, here...)...)
	require.Len(t, got, 7)
	require.Equal(t, sends[3], got[0])
	require.Equal(t, sends[0], got[6])
}

// shellSplit splits a printed command line into words, undoing shellWord's
// single quotes.
func shellSplit(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			w.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "unterminated quote in %q", s)
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestJobsWithoutQueuesSaysSo: `drover jobs` with no queue named, under a
// prefix that holds none (a wrong --prefix, say), printed a bare table
// header, which read as "no such jobs anywhere". It says there are no
// queues under the prefix, as drover queues does; --json stays [].
func TestJobsWithoutQueuesSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, prefix := redistest.Client(t)
	out, err := runCLI(ctx, t, prefix, "jobs")
	require.NoError(t, err, out)
	require.Equal(t, "no queues under prefix \""+prefix+"\"\n", out)
	out, err = runCLI(ctx, t, prefix, "jobs", "--json")
	require.NoError(t, err, out)
	require.JSONEq(t, "[]", out)
}
