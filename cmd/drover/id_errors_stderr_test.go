package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestIDFailuresGoToStderr: promote, remove and retry given job ids wrote
// why an id was not done ("job nosuch: not promoted: ... job not found")
// on stdout, beside the ids that were done; stderr had only "1 of 2 jobs
// not promoted", so with stdout sent to a file or a pipe the reason was
// lost. The reasons now go to stderr, one line each starting "drover: ",
// and stdout keeps the ids done and the summary.
func TestIDFailuresGoToStderr(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	for _, id := range []string{"later", "gone"} {
		_, err := q.Add(ctx, "x", nil, &drover.JobOptions{JobID: id, Delay: 3_600_000_000_000})
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		args []string
		verb string
		done string
	}{
		{[]string{"promote", "q", "later", "nosuch"}, "promoted", "job later: promoted\n"},
		{[]string{"remove", "q", "gone", "nosuch"}, "removed", "job gone: removed\n"},
		{[]string{"retry", "q", "nosuch"}, "retried", ""},
	} {
		var out, errOut bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, append(tc.args,
			"--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
		require.Error(t, err, tc.args)
		require.Contains(t, errOut.String(), "drover: job nosuch: not "+tc.verb+": ", tc.args)
		require.Contains(t, errOut.String(), "job not found", tc.args)
		require.NotContains(t, out.String(), "nosuch", tc.args)
		require.Contains(t, out.String(), tc.done, tc.args)
	}
}
