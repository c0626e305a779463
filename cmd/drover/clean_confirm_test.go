package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// answerAfter answers a prompt with answer once before has run: what
// happens to the queue while the operator reads the question.
type answerAfter struct {
	before func()
	answer io.Reader
}

func (a *answerAfter) Read(p []byte) (int, error) {
	if a.before != nil {
		a.before()
		a.before = nil
	}
	return a.answer.Read(p)
}

// TestCleanRemovesWhatItAsked: `drover clean` asks "remove 2 waiting jobs?"
// and, confirmed, removes those 2, as the dashboard's clean does (it sends
// the count it showed as the limit), not a job that came in while the
// question was open. It removed 3.
func TestCleanRemovesWhatItAsked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	for _, id := range []string{"a", "b"} {
		_, err := q.Add(ctx, "send", nil, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
	}
	var out bytes.Buffer
	m := Main{Stdout: &out, Stderr: &out, Interactive: true, Stdin: &answerAfter{
		before: func() {
			_, err := q.Add(ctx, "send", nil, &drover.JobOptions{JobID: "late"})
			require.NoError(t, err)
		},
		answer: strings.NewReader("y\n"),
	}}
	require.NoError(t, m.Run(ctx, []string{"clean", "mail", "--state", "waiting", "--grace", "0",
		"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}))
	require.Equal(t, "remove 2 waiting jobs older than 0s from mail? This cannot be undone. [y/N] removed 2 waiting jobs older than 0s from mail\n", out.String())
	left, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateWaiting}, 0, -1, true)
	require.NoError(t, err)
	require.Equal(t, []string{"late"}, left, "came after the question")
}
