package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
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

// TestCleanDryRunJSONSaysItStopped: a dry run of a clean without a limit
// lists at most inspect.CleanPreviewCap jobs; the text says "10000 or
// more", and the JSON said wouldRemove 10000 with nothing to tell it from
// exactly 10000. It says capped now.
func TestCleanDryRunJSONSaysItStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	k := prefix + ":mail:"
	dry := func() map[string]any {
		var out bytes.Buffer
		m := Main{Stdout: &out, Stderr: &out}
		require.NoError(t, m.Run(ctx, []string{"clean", "mail", "--state", "completed", "--grace", "0", "--dry-run", "--json",
			"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}))
		var res map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
		return res
	}
	add := func(from, to int) {
		p := rdb.Pipeline()
		for i := from; i < to; i++ {
			id := strconv.Itoa(i)
			p.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", "{}", "timestamp", 1000+i, "returnvalue", "1", "finishedOn", 2000+i)
			p.ZAdd(ctx, k+"completed", redis.Z{Score: float64(2000 + i), Member: id})
		}
		_, err := p.Exec(ctx)
		require.NoError(t, err)
	}
	add(0, inspect.CleanPreviewCap)
	res := dry()
	require.EqualValues(t, inspect.CleanPreviewCap, res["wouldRemove"])
	require.Equal(t, true, res["capped"], "exactly the cap may be more: the preview cannot tell")
	add(inspect.CleanPreviewCap, inspect.CleanPreviewCap+5)
	res = dry()
	require.EqualValues(t, inspect.CleanPreviewCap, res["wouldRemove"])
	require.Equal(t, true, res["capped"])
	require.NoError(t, rdb.ZRemRangeByRank(ctx, k+"completed", 0, 9).Err())
	res = dry()
	require.EqualValues(t, inspect.CleanPreviewCap-5, res["wouldRemove"])
	require.Equal(t, false, res["capped"])
}
