package drover_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/testkit"
)

// logLines parses the JSON log lines with the given message.
func logLines(t *testing.T, s *testkit.SyncBuffer, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestWorkerLogs: every attempt's start and finish carry the fields an
// incident needs, and job data never reaches the log.
func TestWorkerLogs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	buf := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	secret := map[string]string{"card": "secret-payload-4111"}
	for id, opts := range map[string]*drover.JobOptions{
		"ok":    {JobID: "ok", Deduplication: &drover.Deduplication{ID: "op-1"}},
		"bad":   {JobID: "bad"},
		"boom":  {JobID: "boom"},
		"again": {JobID: "again", Attempts: 2},
	} {
		_, err := b.queue.Add(ctx, "charge-"+id, secret, opts)
		require.NoError(t, err)
	}
	b.startWorker(t, func(_ context.Context, job *drover.Job) (any, error) {
		switch job.ID {
		case "bad":
			return nil, drover.Unrecoverable(errors.New("card declined"))
		case "boom":
			panic("nil map")
		case "again":
			return nil, errors.New("gateway timeout")
		}
		return "charged", nil
	}, &drover.WorkerOptions{Logger: logger, Name: "w1"})
	for _, id := range []string{"ok", "bad", "boom", "again"} {
		want := drover.StateFailed
		if id == "ok" {
			want = drover.StateCompleted
		}
		b.waitState(t, id, want)
	}
	testkit.WaitFor(t, 5*time.Second, "5 finish lines", func() bool { return len(logLines(t, buf, "job finished")) == 5 })

	require.NotContains(t, buf.String(), "secret-payload", "job data is never logged")
	started := logLines(t, buf, "job started")
	require.Len(t, started, 5)
	for _, l := range append(started, logLines(t, buf, "job finished")...) {
		for _, k := range []string{logkey.Queue, logkey.Worker, logkey.PID, logkey.JobName, logkey.JobID, logkey.Attempt} {
			require.Contains(t, l, k, l)
		}
		require.Equal(t, "w1", l[logkey.Worker])
		require.Equal(t, "charge-"+l[logkey.JobID].(string), l[logkey.JobName])
		if l[logkey.JobID] == "ok" {
			require.Equal(t, "op-1", l[logkey.OpKey], "the deduplication id is the op key by default")
		} else {
			require.NotContains(t, l, logkey.OpKey)
		}
	}
	finished := map[string]map[string]any{}
	for _, l := range logLines(t, buf, "job finished") {
		finished[l[logkey.JobID].(string)+"/"+l[logkey.Outcome].(string)] = l
	}
	require.Len(t, finished, 5)
	for key, want := range map[string][2]string{
		"ok/completed":             {"DEBUG", ""},
		"bad/failed-unrecoverable": {"WARN", "unrecoverable"},
		"boom/retries-exhausted":   {"WARN", "panic"},
		"again/retried":            {"INFO", "error"},
		"again/retries-exhausted":  {"WARN", "error"},
	} {
		l := finished[key]
		require.NotNil(t, l, key)
		require.Equal(t, want[0], l["level"], key)
		if want[1] == "" {
			require.NotContains(t, l, logkey.ErrorClass, key)
		} else {
			require.Equal(t, want[1], l[logkey.ErrorClass], key)
			require.NotEmpty(t, l[logkey.Error], key)
		}
	}
}

func TestWorkerLogsOpKeyOption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	buf := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "k"})
	require.NoError(t, err)
	b.startWorker(t, func(context.Context, *drover.Job) (any, error) { return nil, nil },
		&drover.WorkerOptions{Logger: logger, OpKey: func(job *drover.Job) string { return "charge:" + job.ID }})
	b.waitState(t, "k", drover.StateCompleted)
	testkit.WaitFor(t, 5*time.Second, "finish line", func() bool { return len(logLines(t, buf, "job finished")) == 1 })
	require.Equal(t, "charge:k", logLines(t, buf, "job finished")[0][logkey.OpKey])
}

// TestWorkerDefaultLogger: a worker given no Logger writes warnings to
// stderr (before, it discarded everything, and a newcomer's failing jobs
// failed silently). Not parallel: it swaps the default output.
func TestWorkerDefaultLogger(t *testing.T) {
	ctx := context.Background()
	buf := &testkit.SyncBuffer{}
	restore := drover.SetDefaultLogOutput(buf)
	defer restore()
	b := setupQueue(t)
	_, err := b.queue.Add(ctx, "welcome", map[string]string{"to": "secret@example.com"}, &drover.JobOptions{JobID: "f"})
	require.NoError(t, err)
	_, err = b.queue.Add(ctx, "welcome", nil, &drover.JobOptions{JobID: "c"})
	require.NoError(t, err)
	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(_ context.Context, job *drover.Job) (any, error) {
		if job.ID == "f" {
			return nil, errors.New("smtp refused")
		}
		return nil, nil
	}), &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	b.waitState(t, "f", drover.StateFailed)
	b.waitState(t, "c", drover.StateCompleted)
	testkit.WaitFor(t, 5*time.Second, "the warning", func() bool { return strings.Contains(buf.String(), "job finished") })
	require.NoError(t, w.Close(ctx))
	out := buf.String()
	require.Contains(t, out, `level=WARN msg="job finished" queue=q`)
	require.Contains(t, out, "job_id=f attempt=1 outcome=retries-exhausted")
	require.Contains(t, out, `error_class=error error="smtp refused"`)
	require.NotContains(t, out, "job_id=c", "completed jobs log at debug level")
	require.NotContains(t, out, "secret@example.com")
}
