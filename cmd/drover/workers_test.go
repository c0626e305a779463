package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestWorkersCommand(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Hour}) // the queue exists
	require.NoError(t, err)
	for _, name := range []string{"w1", ""} {
		w, err := drover.NewWorker(rdb, "mail", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
			&drover.WorkerOptions{Prefix: prefix, Name: name})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
	}
	run := func(args ...string) string {
		var out bytes.Buffer
		m := Main{Stdout: &out, Stderr: &out}
		err := m.Run(ctx, append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
		require.NoError(t, err, out.String())
		return out.String()
	}

	// A worker is blocked on the queue's marker only once its first fetch
	// found nothing; until then it shows as busy.
	var out string
	require.Eventually(t, func() bool {
		out = run("workers", "mail")
		return strings.Count(out, "waiting for jobs") == 2
	}, 10*time.Second, 20*time.Millisecond, "both workers waiting for jobs")
	require.Contains(t, out, "w1")
	require.Contains(t, out, "2 workers")
	require.Regexp(t, `(?m)^w1\s.*\s0\s+idle: waiting for jobs$`, out, "a named worker running nothing")
	require.Regexp(t, `(?m)^-\s.*\s-\s+waiting for jobs$`, out, "an unnamed worker: its running jobs are unknown")

	var ws []inspect.WorkerInfo
	require.NoError(t, json.Unmarshal([]byte(run("workers", "mail", "--json")), &ws))
	require.Len(t, ws, 2)
	names := []string{ws[0].Name, ws[1].Name}
	require.ElementsMatch(t, []string{"w1", ""}, names)

	var errOut bytes.Buffer
	m := Main{Stdout: &errOut, Stderr: &errOut}
	err = m.Run(ctx, []string{"workers", "--redis", "redis://" + redistest.Shared(t).Addr})
	require.Error(t, err)
}
