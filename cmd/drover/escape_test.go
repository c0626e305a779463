package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestTerminalEscapes is issue 15 item 9: names, reasons, stack traces and
// logs written to Redis by anyone cannot drive the operator's terminal.
func TestTerminalEscapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const clear = "\x1b[2J\x1b]0;pwned\x07\u009b31m\u202e" // clear screen, retitle, C1 CSI, bidi override
	rdb, prefix := redistest.Client(t)
	queue := "q" + clear
	q, err := drover.NewQueue(rdb, queue, &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, queue, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		_, err := job.Log(ctx, "log line "+clear)
		require.NoError(t, err)
		return nil, errors.New("reason " + clear + "\n" + "second line " + clear)
	}), &drover.WorkerOptions{Prefix: prefix, DrainDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
	res, err := q.Add(ctx, "name"+clear, map[string]string{"d": clear}, &drover.JobOptions{Attempts: 1})
	require.NoError(t, err)
	waitUntil(t, func() bool {
		s, err := q.GetJobState(ctx, res.Job.ID)
		require.NoError(t, err)
		return s == drover.StateFailed
	})

	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		args = append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, args)
		require.NoError(t, err, out.String())
		return out.String()
	}
	clean := func(t *testing.T, out string) {
		t.Helper()
		require.NotContains(t, out, "\x1b", "raw ESC in:\n%s", out)
		require.NotContains(t, out, "\x07")
		require.NotContains(t, out, "\u009b")
		require.NotContains(t, out, "\u202e")
		require.Contains(t, out, `\x1b[2J\x1b]0;pwned\x07\u009b31m\u202e`)
	}
	for _, args := range [][]string{
		{"queues"},
		{"jobs"},
		{"jobs", queue, "--state", "failed"},
		{"job", queue, res.Job.ID},
	} {
		t.Run(args[0], func(t *testing.T) { clean(t, run(args...)) })
	}
	t.Run("JobJSON", func(t *testing.T) {
		out := run("job", queue, res.Job.ID, "--json")
		require.NotContains(t, out, "\x1b")
		require.NotContains(t, out, "\u009b")
		require.NotContains(t, out, "\u202e")
		var d struct {
			Name  string `json:"name"`
			Queue string `json:"queue"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &d), "--json stays valid JSON")
		require.Equal(t, "name"+clear, d.Name, "and carries the exact name")
		require.Equal(t, queue, d.Queue)
	})
	t.Run("WatchFromStart", func(t *testing.T) {
		var out testkit.SyncBuffer
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- (&Main{Stdout: &out, Stderr: &out}).Run(wctx, []string{"watch", queue, "--from", "0",
				"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix})
		}()
		waitUntil(t, func() bool { return bytes.Contains([]byte(out.String()), []byte("failed")) })
		cancel()
		require.NoError(t, <-done)
		clean(t, out.String())
	})
	t.Run("SplitWrites", func(t *testing.T) {
		var out bytes.Buffer
		ew := newEscapingWriter(&out)
		for _, b := range []byte("é" + clear + "ü") {
			_, err := ew.Write([]byte{b})
			require.NoError(t, err)
		}
		require.Equal(t, `é\x1b[2J\x1b]0;pwned\x07\u009b31m\u202eü`, out.String())
	})
	t.Run("InvisibleFormatCharacters", func(t *testing.T) {
		// Zero-width space, word joiner, invisible operators and the BOM
		// made "in\u200bvoice" print as "invoice", a name it is not; the
		// dashboard shows them escaped too. A zero-width joiner (emoji
		// sequences) stays.
		require.Equal(t, "in\\u200bvoice \\u2060\\u2064 \\ufeffx a\u200db", escapeControls("in\u200bvoice \u2060\u2064 \ufeffx a\u200db"))
	})
}
