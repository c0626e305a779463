package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestZZWalkEnv(t *testing.T) {
	if os.Getenv("WALKENV") == "" {
		t.Skip()
	}
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	add := func(queue, name string, data any, opts map[string]any) string {
		id, err := o.Add(ctx, b.prefix, queue, name, data, opts)
		require.NoError(t, err)
		return id
	}
	// Node: payments queue with thousands of jobs
	var bulk []bullmqoracle.BulkJob
	for i := range 3000 {
		bulk = append(bulk, bullmqoracle.BulkJob{Name: fmt.Sprintf("charge-%d", i%7), Data: map[string]any{"n": i, "behavior": bullmqoracle.FailTimes(i%3, "gateway timeout", "ok")}, Opts: map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 5}}})
	}
	_, err := o.AddBulk(ctx, b.prefix, "payments", bulk)
	require.NoError(t, err)
	add("payments", "doomed", map[string]any{"behavior": bullmqoracle.Fail("boom <script>alert(1)</script>")}, map[string]any{"attempts": 2})
	add("payments", "hopeless", map[string]any{"behavior": bullmqoracle.Unrecoverable("card declined")}, nil)
	add("payments", "<b>html</b> ☃ 名前 \u202eRLO", map[string]any{"big": strings.Repeat("x", 300_000)}, map[string]any{"jobId": "a.b/c%d#e?f g"})
	add("payments", "later", nil, map[string]any{"delay": 3_600_000})
	for i := range 40 {
		add("payments", "urgent", map[string]any{"i": i}, map[string]any{"priority": 1 + i%5, "delay": 3_600_000})
	}
	_, err = o.UpsertJobScheduler(ctx, b.prefix, "payments", "every-hour", map[string]any{"every": 3_600_000}, map[string]any{"name": "tick"})
	require.NoError(t, err)
	_, err = o.UpsertJobScheduler(ctx, b.prefix, "payments", "nightly", map[string]any{"pattern": "0 3 * * *", "tz": "Europe/Berlin"}, map[string]any{"name": "report"})
	require.NoError(t, err)
	_, err = o.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{Name: "assemble", QueueName: "flows", Children: []bullmqoracle.FlowJob{
		{Name: "part", QueueName: "payments", Opts: map[string]any{"delay": 3_600_000}},
		{Name: "part2", QueueName: "flows-kids"},
	}})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "payments", bullmqoracle.WorkerOptions{ID: "w", Name: "node-walker", Concurrency: 50, Behavior: bullmqoracle.FromData("behavior")}))
	t.Cleanup(func() { _ = o.StopWorker(context.Background(), "w", true) })
	// drover queue: emails, some failing with wrapped errors, retries in backoff
	for i := range 500 {
		var opts *drover.JobOptions
		if i%10 == 0 {
			opts = testRetry
		}
		b.add(t, "emails ✉", "send", map[string]any{"to": fmt.Sprintf("user%d@example.com", i)}, opts)
	}
	b.startWorker(t, "emails ✉", func(ctx context.Context, j *drover.Job) (any, error) {
		if strings.HasSuffix(j.ID, "0") {
			return nil, fmt.Errorf("smtp: %w", errors.New("550 mailbox unavailable"))
		}
		return "sent", nil
	}, nil)
	// a paused queue and an active held job
	b.add(t, "reports", "monthly", nil, nil)
	held, _ := b.holdJob(t, "imports", &drover.WorkerOptions{Concurrency: 2})
	_ = held
	require.NoError(t, os.WriteFile("/tmp/walk/url", []byte(b.url), 0o644))
	t.Logf("URL %s prefix %s", b.url, b.prefix)
	deadline := time.Now().Add(85 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat("/tmp/walk/stop"); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
}
