package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestQueueCommands is acceptance 6: the queue commands against a real
// Redis, as tables and as --json, with --dry-run.
func TestQueueCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		rdb    *redis.Client
		prefix string
		queue  *drover.Queue
		failed []string // failed jobs: "timeout" reason for 0 and 2, "refused" for 1
		backof string   // a job that failed twice and waits an hour
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		rdb, prefix := redistest.Client(t)
		q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix, BackoffTypes: []string{"test"}})
		require.NoError(t, err)
		w, err := drover.NewWorker(rdb, "mail", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			switch job.Name {
			case "send":
				return "sent", nil
			case "flaky":
				return nil, fmt.Errorf("smtp timeout (attempt %d)", job.AttemptsStarted)
			}
			return nil, errors.New(job.Name)
		}), &drover.WorkerOptions{Prefix: prefix, DrainDelay: 50 * time.Millisecond, Name: "w1",
			BackoffStrategies: map[string]drover.BackoffFunc{"test": func(n int, _ string, _ error, _ *drover.Job) time.Duration {
				if n == 1 {
					return 10 * time.Millisecond
				}
				return time.Hour
			}}})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
		b := &testBundle{rdb: rdb, prefix: prefix, queue: q}
		add := func(name string, opts *drover.JobOptions) string {
			res, err := q.Add(ctx, name, map[string]string{"to": "a@example.com"}, opts)
			require.NoError(t, err)
			return res.Job.ID
		}
		done := add("send", nil)
		for _, reason := range []string{"timeout", "refused", "timeout"} {
			b.failed = append(b.failed, add(reason, &drover.JobOptions{Attempts: 1}))
		}
		b.backof = add("flaky", &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: "test"}})
		waitUntil(t, func() bool {
			n, err := q.GetJobCounts(ctx)
			require.NoError(t, err)
			j, err := q.GetJob(ctx, b.backof)
			require.NoError(t, err)
			return n[drover.StateFailed] == 3 && n[drover.StateCompleted] == 1 && j.AttemptsMade == 2
		})
		_ = done
		require.NoError(t, q.Pause(ctx)) // retried jobs stay in wait
		return b
	}
	run := func(t *testing.T, b *testBundle, args ...string) (string, error) {
		t.Helper()
		var out bytes.Buffer
		m := Main{Stdout: &out, Stderr: &out}
		args = append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", b.prefix)
		err := m.Run(ctx, args)
		return out.String(), err
	}
	ok := func(t *testing.T, b *testBundle, args ...string) string {
		t.Helper()
		out, err := run(t, b, args...)
		require.NoError(t, err, out)
		return out
	}

	t.Run("AddWithOptionsAndDuplicate", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := ok(t, b, "add", "mail", "digest", "--data", `{"to":"ada@example.com"}`,
			"--opts", `{"jobId":"digest-ada","attempts":3,"backoff":{"type":"exponential","delay":1000}}`)
		require.Equal(t, "added job digest-ada to mail\n", out)
		job, err := b.queue.GetJob(ctx, "digest-ada")
		require.NoError(t, err)
		require.Equal(t, 3, job.Opts.Attempts)
		require.JSONEq(t, `{"to":"ada@example.com"}`, string(job.Data))
		var res map[string]any
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "add", "mail", "digest", "--opts", `{"jobId":"digest-ada"}`, "--json")), &res))
		require.Equal(t, "duplicate", res["outcome"])
		require.Equal(t, "waiting", res["existingState"])
		// A new job has no existing state: the key is left out, not "".
		res = nil
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "add", "mail", "fresh", "--json")), &res))
		require.Equal(t, "created", res["outcome"])
		require.NotContains(t, res, "existingState")

		_, err = run(t, b, "add", "mail", "x", "--opts", `{"retries":3}`)
		require.ErrorContains(t, err, `unknown job option "retries"`)
		_, err = run(t, b, "add", "mail", "x", "--data", `{oops`)
		require.ErrorContains(t, err, "--data is not valid JSON")
		_, err = run(t, b, "add", "mail", "x", "--opts", `{"jobId":"123"}`)
		require.ErrorContains(t, err, `job id "123" must not be an integer`)
		// A custom backoff strategy is the workers' (a Node worker's
		// settings), which the CLI cannot see: taken as given, as BullMQ's
		// Queue.add takes it. It was refused ("unknown
		// JobOptions.Backoff.Type", a library option's name, exit 1).
		out = ok(t, b, "add", "mail", "smtp-retry", "--opts", `{"jobId":"smtp-1","attempts":5,"backoff":{"type":"smtp","delay":500}}`)
		require.Equal(t, "added job smtp-1 to mail\n", out)
		job, err = b.queue.GetJob(ctx, "smtp-1")
		require.NoError(t, err)
		require.Equal(t, "smtp", job.Opts.Backoff.Type)
		// Data given as a third word, without --data: said so, not "needs
		// <queue> <name>" (both were given), and nothing added.
		_, err = run(t, b, "add", "mail", "x", `{"to":"bo@example.com"}`)
		require.ErrorContains(t, err, `unexpected "{\"to\":\"bo@example.com\"}" (data goes in --data`)
	})

	// A flow: the parent names what it waits for, the child its parent.
	t.Run("JobShowsFlowParentAndChildren", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		t.Cleanup(func() { _ = flows.Close() })
		tree, err := flows.Add(ctx, drover.FlowJob{Name: "digest", QueueName: "mail", Opts: &drover.JobOptions{JobID: "parent-1"},
			Children: []drover.FlowJob{{Name: "render", QueueName: "mail", Opts: &drover.JobOptions{JobID: "child-1", Delay: time.Hour}}}})
		require.NoError(t, err)
		require.Equal(t, "parent-1", tree.Job.ID)
		out := ok(t, b, "job", "mail", "parent-1")
		require.Contains(t, out, "  children     1 pending, 0 completed, 0 failed the parent, 0 failed and ignored\n    pending    mail/child-1\n")
		require.Contains(t, ok(t, b, "job", "mail", "child-1"), "  flow parent  mail/parent-1\n")
	})

	// A job hash that does not decode is named apart; the others list.
	t.Run("UnreadableJobNamedApart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		k := b.prefix + ":mail:"
		require.NoError(t, b.rdb.HSet(ctx, k+"damaged", "name", "x", "data", "{}", "opts", `{"attempts":"one"}`, "timestamp", 1000,
			"atm", 1, "finishedOn", 2000).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redis.Z{Score: 2000, Member: "damaged"}).Err())
		out := ok(t, b, "jobs", "mail", "--state", "failed")
		require.Contains(t, out, `mail: cannot read job damaged (another tool wrote it, or it is damaged): job damaged: field opts: opts.attempts: not a number: "one"`)
		require.Contains(t, out, "mail: 4 failed jobs, 3 shown\n", "the other failed jobs are listed")
	})

	t.Run("Queues", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := ok(t, b, "queues")
		require.Regexp(t, `QUEUE\s+STATE\s+WAITING\s+PRIORITIZED\s+ACTIVE\s+DELAYED\s+WAITING-CHILDREN\s+COMPLETED\s+FAILED\s+ALERTS\s+LIMITS\n`, out)
		require.Regexp(t, `mail\s+paused \d+s\s+0\s+0\s+0\s+1\s+0\s+1\s+3\s+-\s+-\n`, out)
		var rows []queueRow
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "queues", "--json")), &rows))
		require.Len(t, rows, 1)
		require.Equal(t, inspect.Counts{Delayed: 1, Completed: 1, Failed: 3}, rows[0].Counts)
		require.True(t, rows[0].Paused)

		// Limits: the global concurrency reached by the active jobs, a
		// global rate limit, a manual rate limit.
		mail, err := drover.NewQueue(b.rdb, "mail", &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		require.NoError(t, mail.SetGlobalConcurrency(ctx, 1))
		require.NoError(t, mail.SetGlobalRateLimit(ctx, 100, time.Second))
		require.NoError(t, b.rdb.LPush(ctx, b.prefix+":mail:active", "running-elsewhere").Err())
		require.NoError(t, mail.RateLimit(ctx, time.Hour))
		require.Regexp(t, `mail\s+paused \d+s\s+0\s+0\s+1\s+1\s+0\s+1\s+3\s+-\s+maxed 1/1, rate-limited 1h0m0s, max 100/1s\n`, ok(t, b, "queues"))
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "queues", "--json")), &rows))
		require.True(t, rows[0].Limits.Maxed)
		require.Equal(t, &inspect.RateLimit{Max: 100, Duration: time.Second}, rows[0].Limits.RateLimit)
		_, err = mail.RemoveRateLimitKey(ctx)
		require.NoError(t, err)
		require.NoError(t, mail.RemoveGlobalRateLimit(ctx))
		require.NoError(t, b.rdb.LPop(ctx, b.prefix+":mail:active").Err())
		require.Regexp(t, `mail\s+paused \d+s\s+0\s+0\s+0\s+1\s+0\s+1\s+3\s+-\s+concurrency 1\n`, ok(t, b, "queues"))

		// A queue only a Node producer wrote since the last listing: --scan
		// finds it at once.
		require.NoError(t, b.rdb.XAdd(ctx, &redis.XAddArgs{Stream: b.prefix + ":fromnode:events", Values: []any{"event", "waiting"}}).Err())
		require.Regexp(t, `fromnode\s+running`, ok(t, b, "queues", "--scan"))
	})

	// A flow parent waiting on its children (a Node FlowProducer's tree,
	// the same state drover's FlowProducer writes) is counted: Node's
	// getJobCounts names it waiting-children.
	t.Run("QueuesCountWaitingChildren", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		t.Cleanup(func() { _ = flows.Close() })
		_, err = flows.Add(ctx, drover.FlowJob{Name: "digest", QueueName: "orders", Opts: &drover.JobOptions{JobID: "parent-1"},
			Children: []drover.FlowJob{{Name: "render", QueueName: "renders", Opts: &drover.JobOptions{JobID: "child-1", Delay: time.Hour}}}})
		require.NoError(t, err)
		out := ok(t, b, "queues")
		require.Regexp(t, `QUEUE\s+STATE\s+WAITING\s+PRIORITIZED\s+ACTIVE\s+DELAYED\s+WAITING-CHILDREN\s+COMPLETED\s+FAILED\s+ALERTS`, out)
		require.Regexp(t, `\norders\s+running\s+0\s+0\s+0\s+0\s+1\s+0\s+0\s+-`, out)
		require.Regexp(t, `\nrenders\s+running\s+0\s+0\s+0\s+1\s+0\s+0\s+0\s+-`, out)
	})

	t.Run("Jobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := ok(t, b, "jobs", "mail", "--state", "failed", "--filter", "reason=timeout")
		require.Regexp(t, `QUEUE\s+ID\s+NAME\s+RETRY STATE\s+ATTEMPTS`, out)
		require.Regexp(t, `mail\s+`+b.failed[2]+`\s+timeout\s+failed for good: attempts used up\s+1/1`, out)
		require.Regexp(t, `mail\s+`+b.failed[0]+`\s+timeout\s+failed for good: attempts used up\s+1/1`, out)
		require.NotContains(t, out, "refused")
		require.Contains(t, out, "mail: 3 failed jobs, 2 match reason=timeout, 2 shown")
		// No queue named: every queue; flags after the positional work too.
		out = ok(t, b, "jobs", "--state", "delayed")
		require.Regexp(t, `mail\s+`+b.backof+`\s+flaky\s+waiting-for-backoff\s+2/3\s+0\s+next .* \(in (59m|1h0m)`, out)
		var pages []inspect.JobPage
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "jobs", "mail", "--json", "--filter", "left<=0", "--limit", "1")), &pages))
		require.Len(t, pages[0].Jobs, 1)
		require.True(t, pages[0].More)
		_, err := run(t, b, "jobs", "--filter", "bogus")
		var usage *usageError
		require.ErrorAs(t, err, &usage)
	})

	// A page that has more ends with the command of the next page, which
	// continues after the page's last job: two jobs of the first page left
	// the state in between (retried), yet none is skipped or shown twice.
	t.Run("JobsPagesByCursor", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		k := b.prefix + ":pages:"
		for n := range 7 {
			id := fmt.Sprintf("p%d", n)
			require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", `{"attempts":1}`, "timestamp", 1000,
				"atm", 1, "failedReason", "boom", "finishedOn", 2000+n).Err())
			require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redis.Z{Score: float64(2000 + n), Member: id}).Err())
		}
		ids := regexp.MustCompile(`(?m)^pages\s+(p\d)\s`)
		shown := func(out string) []string {
			var got []string
			for _, m := range ids.FindAllStringSubmatch(out, -1) {
				got = append(got, m[1])
			}
			return got
		}
		next := regexp.MustCompile(`(?m)^pages: next page: drover jobs pages --state failed --limit 3 --prefix \S+ --redis \S+ --after (\S+)$`)
		out := ok(t, b, "jobs", "pages", "--limit", "3")
		require.Equal(t, []string{"p6", "p5", "p4"}, shown(out))
		m := next.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		require.NoError(t, b.rdb.ZRem(ctx, k+"failed", "p6", "p4").Err())
		out = ok(t, b, "jobs", "pages", "--limit", "3", "--after", strings.Trim(m[1], "'"))
		require.Equal(t, []string{"p3", "p2", "p1"}, shown(out), "an offset of 3 would skip p3 and p2")
		require.Contains(t, out, "the list moved since the last page (job p4 was at 2, now 1, it left the state)")
		m = next.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		out = ok(t, b, "jobs", "pages", "--limit", "3", "--after", strings.Trim(m[1], "'"))
		require.Equal(t, []string{"p0"}, shown(out), out)
		require.NotContains(t, out, "next page")
		for _, bad := range [][]string{
			{"jobs", "--after", m[1]},                           // no queue
			{"jobs", "pages", "mail", "--after", m[1]},          // two queues
			{"jobs", "pages", "--after", m[1], "--offset", "2"}, // two starts
			{"jobs", "pages", "--after", "not-a-cursor"},        // made up
		} {
			_, err := run(t, b, bad...)
			var usage *usageError
			require.ErrorAs(t, err, &usage, bad)
		}
	})

	// In a list (waiting) the same, when the page's last job left and new
	// jobs came on top: the next page goes on after the jobs next to it;
	// when those left too, the page says it may be off.
	t.Run("JobsPagesAListByCursor", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		q, err := drover.NewQueue(b.rdb, "lst", &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		var ids []string // oldest first
		add := func(n int) {
			res, err := q.Add(ctx, fmt.Sprintf("j%d", n), nil, nil)
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		for n := range 8 {
			add(n)
		}
		names := regexp.MustCompile(`(?m)^lst\s+\S+\s+(j\d+)\s`)
		shown := func(out string) []string {
			var got []string
			for _, m := range names.FindAllStringSubmatch(out, -1) {
				got = append(got, m[1])
			}
			return got
		}
		next := regexp.MustCompile(`(?m)^lst: next page: drover jobs lst --state waiting --limit 3 --prefix \S+ --redis \S+ --after (\S+)$`)
		out := ok(t, b, "jobs", "lst", "--state", "waiting", "--limit", "3")
		require.Equal(t, []string{"j7", "j6", "j5"}, shown(out))
		m := next.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		cursor := strings.Trim(m[1], "'")
		require.NoError(t, b.rdb.LRem(ctx, b.prefix+":lst:wait", 1, ids[5]).Err())
		add(8)
		out = ok(t, b, "jobs", "lst", "--state", "waiting", "--limit", "3", "--after", cursor)
		require.Equal(t, []string{"j4", "j3", "j2"}, shown(out))
		require.Contains(t, out, "it left the state)")
		// Every job the cursor names leaves: the page starts at the old
		// position and says so.
		for _, n := range []int{7, 6, 4, 3, 2, 1} {
			require.NoError(t, b.rdb.LRem(ctx, b.prefix+":lst:wait", 1, ids[n]).Err())
		}
		out = ok(t, b, "jobs", "lst", "--state", "waiting", "--limit", "3", "--after", cursor)
		require.Contains(t, out, "it left the state, and so did the jobs next to it: jobs may be skipped or shown twice)")
	})

	// Issue 10 item 10 and issue 13 item 7: --json prints BullMQ's names
	// and milliseconds, the names the dashboard's API uses.
	t.Run("JSONUsesBullMQNamesAndMilliseconds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		res, err := b.queue.Add(ctx, "slow", nil, &drover.JobOptions{Attempts: 3, Delay: 90 * time.Second,
			Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: 1500 * time.Millisecond, Jitter: 0.5}})
		require.NoError(t, err)
		var job map[string]any
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "job", "mail", res.Job.ID, "--json")), &job))
		require.Equal(t, map[string]any{"type": "exponential", "delay": 1500.0, "jitter": 0.5}, job["backoff"])
		require.Equal(t, 90000.0, job["delay"])
		require.Equal(t, "slow", job["name"])
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "job", "mail", b.backof, "--json")), &job))
		tl := job["timeline"].([]any)
		require.Equal(t, 10.0, tl[0].(map[string]any)["backoff"], "the first backoff, 10ms")
		require.Equal(t, 3600000.0, tl[1].(map[string]any)["backoff"], "the second, an hour")
		var pages []map[string]any
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "jobs", "mail", "--state", "delayed", "--json")), &pages))
		first := pages[0]["jobs"].([]any)[0].(map[string]any)
		for _, k := range []string{"id", "name", "retryState", "budget", "nextRun", "timestamp", "attemptsMade", "attemptsStarted", "stalledCounter"} {
			require.Contains(t, first, k)
		}
		// Instants are epoch ms, as BullMQ's timestamp; no drover-only
		// names for BullMQ's fields.
		require.IsType(t, 0.0, first["nextRun"])
		require.Greater(t, first["nextRun"], float64(time.Now().UnixMilli()))
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "job", "mail", res.Job.ID, "--json")), &job))
		require.Equal(t, float64(res.Job.Timestamp.UnixMilli()), job["timestamp"])
		require.Equal(t, 0.0, job["attemptsMade"])
		require.Equal(t, 0.0, job["stalledCounter"])
		for _, old := range []string{"created", "stalledCount", "returnValue"} {
			require.NotContains(t, job, old)
			require.NotContains(t, first, old)
		}
	})

	// Issue 12 defect 5: a job failed as unrecoverable (here by a Node
	// worker: BullMQ's UnrecoverableError names itself in the trace) says so.
	t.Run("UnrecoverableShownDistinctly", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		k := b.prefix + ":mail:"
		require.NoError(t, b.rdb.HSet(ctx, k+"fraud", "name", "charge", "data", "{}", "opts", `{"attempts":5}`, "timestamp", 1000,
			"atm", 1, "ats", 1, "failedReason", "fraud suspected", "finishedOn", 2000, "processedOn", 1500,
			"stacktrace", `["UnrecoverableError: fraud suspected\n    at Worker.processor (/app/worker.js:10:11)"]`).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redis.Z{Score: 2000, Member: "fraud"}).Err())
		out := ok(t, b, "job", "mail", "fraud")
		require.Contains(t, out, "retry state  failed for good: unrecoverable (state failed)")
		require.Contains(t, out, "attempts     1 of 5 used (1 started)")
		require.NotContains(t, out, "4 left")
		require.Contains(t, out, "#1   failed: unrecoverable")
		out = ok(t, b, "jobs", "mail", "--state", "failed")
		require.Regexp(t, `mail\s+fraud\s+charge\s+failed for good: unrecoverable\s+1/5`, out)
		// Bulk retries leave it alone unless asked (issue 12 defect 2).
		out = ok(t, b, "retry", "mail", "--dry-run")
		require.Contains(t, out, "dry run: would retry 3 failed jobs in mail; 1 failed as unrecoverable left alone (--include-unrecoverable retries them)\n")
		require.NotContains(t, out, "  fraud\n")
		out = ok(t, b, "retry", "mail", "--dry-run", "--include-unrecoverable")
		require.Contains(t, out, "dry run: would retry 4 failed jobs in mail\n")
		require.Contains(t, out, "  fraud\n")
	})

	t.Run("JobRetryStateInspector", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := ok(t, b, "job", "mail", b.backof)
		for _, want := range []string{
			`job ` + b.backof + ` "flaky" in queue mail`,
			"retry state  waiting-for-backoff (state delayed)",
			"attempts     2 of 3 used, 1 left (2 started)",
			"next run     ",
			"attempt timeline (drover):",
			"last error   smtp timeout (attempt 2)",
		} {
			require.Contains(t, out, want)
		}
		require.Regexp(t, `#1\s+retry-delayed\s+\d\d:\d\d:\d\d\.\d{3} ran \S+\s+smtp timeout \(attempt 1\)\n\s+└ backoff 10ms\n`, out)
		require.Regexp(t, `#2\s+retry-delayed .*\n\s+└ backoff 1h0m0s, next run .* \(in (59m|1h0m)`, out)
		var d inspect.JobDetail
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "job", "mail", b.backof, "--json")), &d))
		require.Equal(t, inspect.RetryStateBackoff, d.RetryState)
		require.Len(t, d.Timeline, 2)
		_, err := run(t, b, "job", "mail", "404")
		require.ErrorIs(t, err, drover.ErrJobNotFound)
		_, err = run(t, b, "job", "mail") // one argument: an id looked for in every queue
		require.ErrorIs(t, err, drover.ErrJobNotFound)
		_, err = run(t, b, "job")
		var usage *usageError
		require.ErrorAs(t, err, &usage)
		_, err = run(t, b, "job", "mail", "1", "2")
		require.ErrorAs(t, err, &usage)
	})

	t.Run("RetryDryRunMovesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := ok(t, b, "retry", "mail", "--state", "failed", "--filter", "reason=timeout", "--dry-run")
		require.Contains(t, out, "dry run: would retry 2 failed jobs matching reason=timeout in mail\n")
		require.Contains(t, out, "  "+b.failed[2]+"\n  "+b.failed[0]+"\n")
		var res inspect.RetryResult
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "retry", "mail", "--dry-run", "--json")), &res))
		require.True(t, res.DryRun)
		require.Equal(t, 3, res.Matched)
		require.Zero(t, res.Retried)
		n, err := b.queue.GetJobCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(3), n[drover.StateFailed], "a dry run moves nothing")
	})

	t.Run("RetryWithProgressAndReset", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := ok(t, b, "retry", "mail", "--filter", "reason=timeout", "--reset-attempts", "--chunk", "1", "--pause", "1ms", "--progress")
		require.Contains(t, out, "\rretrying [###############...............] 1/2  50%")
		require.Contains(t, out, "\rretrying [##############################] 2/2 100%\n")
		require.Regexp(t, `retried 2 of 2 failed jobs matching reason=timeout in mail with fresh attempts in \S+\n`, out)
		for _, id := range []string{b.failed[0], b.failed[2]} {
			j, err := b.queue.GetJob(ctx, id)
			require.NoError(t, err)
			require.Zero(t, j.AttemptsMade)
		}
		var res inspect.RetryResult
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "retry", "mail", "--json", "--pause", "0")), &res))
		require.Equal(t, 1, res.Retried, "the refused one, without a filter")
	})

	t.Run("RetryJobWaitingForBackoff", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		out := ok(t, b, "retry", "mail", b.backof, "--reset-attempts")
		require.Equal(t, "job "+b.backof+": retried from delayed\n", out)
		j, err := b.queue.GetJob(ctx, b.backof)
		require.NoError(t, err)
		require.Zero(t, j.AttemptsMade)
		out, err = run(t, b, "retry", "mail", b.backof, "404")
		require.Error(t, err)
		require.Contains(t, out, "job "+b.backof+": not retried:")
		require.Contains(t, out, "job 404: not retried:")
	})

	t.Run("PromoteAndClean", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, "promoted 1 delayed jobs in mail\n", ok(t, b, "promote", "mail"))
		var res map[string]any
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "promote", "mail", "--json")), &res))
		require.Equal(t, 0.0, res["promoted"])
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "clean", "mail", "--state", "failed", "--grace", "0", "--yes", "--json")), &res))
		require.Equal(t, 3.0, res["removed"])
	})

	// Issue 12 defect 3: clean keeps the last hour by default (as its usage
	// and the dashboard say), lists what it would remove with --dry-run, asks
	// on a terminal and refuses without --yes elsewhere.
	t.Run("CleanDefaultsDryRunAndConfirmation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		completed := func() int64 {
			n, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
			require.NoError(t, err)
			return n[drover.StateCompleted]
		}
		require.Equal(t, "nothing to remove: no completed jobs older than 1h0m0s from mail\n", ok(t, b, "clean", "mail"))
		require.EqualValues(t, 1, completed())
		out, err := run(t, b, "clean", "mail", "--grace", "0")
		var usage *usageError
		require.ErrorAs(t, err, &usage, out)
		require.ErrorContains(t, err, "clean would remove 1 completed jobs older than 0s from mail: pass --yes to confirm")
		require.EqualValues(t, 1, completed())
		out = ok(t, b, "clean", "mail", "--grace", "0", "--dry-run")
		require.Regexp(t, `^dry run: would remove 1 completed jobs older than 0s from mail\n  \d+\n$`, out)
		require.EqualValues(t, 1, completed())
		ask := func(answer string) string {
			var out bytes.Buffer
			m := Main{Stdout: &out, Stderr: &out, Stdin: strings.NewReader(answer), Interactive: true}
			require.NoError(t, m.Run(ctx, []string{"clean", "mail", "--grace", "0", "--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", b.prefix}))
			return out.String()
		}
		require.Equal(t, "remove 1 completed jobs older than 0s from mail? This cannot be undone. [y/N] not removed\n", ask("\n"))
		require.EqualValues(t, 1, completed())
		require.Equal(t, "remove 1 completed jobs older than 0s from mail? This cannot be undone. [y/N] removed 1 completed jobs older than 0s from mail\n", ask("y\n"))
		require.EqualValues(t, 0, completed())
	})

	// A negative --limit was taken as "no limit" by the listing that
	// precedes the question (and "nothing to remove" came back).
	t.Run("CleanRefusesNegativeLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, extra := range [][]string{nil, {"--dry-run"}, {"--yes"}} {
			out, err := run(t, b, append([]string{"clean", "mail", "--grace", "0", "--limit", "-1"}, extra...)...)
			var usage *usageError
			require.ErrorAs(t, err, &usage, out)
			require.ErrorContains(t, err, "--limit must not be negative, got -1")
		}
		ins, err := inspect.New(b.rdb, &inspect.Options{Prefix: b.prefix})
		require.NoError(t, err)
		_, err = ins.CleanCandidates(ctx, "mail", drover.StateCompleted, 0, -1)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		n, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		require.EqualValues(t, 1, n[drover.StateCompleted])
	})

	t.Run("Watch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, asJSON := range []bool{false, true} {
			var out testkit.SyncBuffer
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			args := []string{"watch", "mail", "--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", b.prefix}
			if asJSON {
				args = append(args, "--json")
			}
			go func() { done <- (&Main{Stdout: &out, Stderr: &out}).Run(wctx, args) }()
			// The stream position is fixed before the command reads: wait
			// for it to start, then add.
			time.Sleep(200 * time.Millisecond)
			res, err := b.queue.Add(ctx, "watched", nil, nil)
			require.NoError(t, err)
			waitUntil(t, func() bool { return strings.Contains(out.String(), "waiting") })
			cancel()
			require.NoError(t, <-done)
			if asJSON {
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				var ev inspect.Event
				require.NoError(t, json.Unmarshal([]byte(lines[0]), &ev))
				require.Equal(t, inspect.Event{ID: ev.ID, Time: ev.Time, Queue: "mail", Name: drover.EventAdded, JobID: res.Job.ID, JobName: "watched"}, ev)
			} else {
				require.Regexp(t, regexp.MustCompile(`watching mail \(Ctrl-C to stop\)\n\d\d:\d\d:\d\d\.\d{3} added\s+job `+res.Job.ID+` "watched"\n`), out.String())
			}
		}
	})

	// Issue 12, "what operators look for first" (CLI part).
	// drover limits shows and changes what every worker obeys; a bad flag
	// changes nothing, even with a good one before it.
	t.Run("LimitsShowAndChange", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, "concurrency:  none\nrate limit:   none\nrate-limited: no\n", ok(t, b, "limits", "mail"))
		require.Equal(t, "mail: set concurrency=2 rate=100/1s block=1h0m0s\n"+
			"concurrency:  2 (0 active)\nrate limit:   100 per 1s\nrate-limited: for 1h0m0s more (workers that apply a limit take no job)\n",
			ok(t, b, "limits", "mail", "--concurrency", "2", "--rate", "100/1s", "--block", "1h"))
		n, set, err := b.queue.GetGlobalConcurrency(ctx)
		require.NoError(t, err)
		require.True(t, set)
		require.Equal(t, 2, n)
		rl, err := b.queue.GetGlobalRateLimit(ctx)
		require.NoError(t, err)
		require.Equal(t, &drover.RateLimit{Max: 100, Duration: time.Second}, rl)
		var lim inspect.Limits
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "limits", "mail", "--json")), &lim))
		require.Greater(t, lim.RateLimitedFor, 59*time.Minute)

		for _, bad := range [][]string{
			{"--concurrency", "0"}, {"--concurrency", "many"}, {"--rate", "100"}, {"--rate", "x/1s"}, {"--rate", "5/0s"},
			{"--concurrency", "1", "--rate", "0/1s"}, {"--block", "-1s"}, {"--block", "1s", "--unblock"},
		} {
			_, err := run(t, b, append([]string{"limits", "mail"}, bad...)...)
			var ue *usageError
			require.ErrorAs(t, err, &ue, "%v", bad)
		}
		n, _, err = b.queue.GetGlobalConcurrency(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n, "a refused command changed nothing")

		require.Equal(t, "mail: set concurrency=none rate=none unblock\n"+
			"concurrency:  none\nrate limit:   none\nrate-limited: no\n",
			ok(t, b, "limits", "mail", "--concurrency", "none", "--rate", "none", "--unblock"))
		_, err = run(t, b, "limits", "nosuchqueue")
		require.ErrorIs(t, err, inspect.ErrQueueNotFound)
	})

	t.Run("DedupShowsTheHolderAndReleases", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// The setup's worker is running: hold the queue so the jobs wait.
		require.NoError(t, b.queue.Pause(ctx))
		add := func(id string, ttl time.Duration) *drover.AddResult {
			res, err := b.queue.Add(ctx, "send", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: id, TTL: ttl}})
			require.NoError(t, err)
			return res
		}
		held := add("op-1", 0).Job.ID
		require.Equal(t, `deduplication id "op-1" of mail is held by job `+held+` (waiting), with no expiry: freed when the job finishes or is removed`+"\n",
			ok(t, b, "dedup", "mail", "op-1"))
		timed := add("op-2", time.Hour).Job.ID
		require.Regexp(t, `^deduplication id "op-2" of mail is held by job `+timed+` \(waiting\) until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (59m5\ds|1h0m0s)\)\n$`,
			ok(t, b, "dedup", "mail", "op-2"))
		var shown struct {
			ID, JobID, State string
			Expires          int64
		}
		require.NoError(t, json.Unmarshal([]byte(ok(t, b, "dedup", "mail", "op-2", "--json")), &shown))
		require.Equal(t, "op-2", shown.ID)
		require.Equal(t, timed, shown.JobID)
		require.Equal(t, "waiting", shown.State)
		require.InDelta(t, time.Now().Add(time.Hour).UnixMilli(), shown.Expires, 60e3)

		require.Equal(t, `released deduplication id "op-1" of mail (held by job `+held+`, which is left alone)`+"\n",
			ok(t, b, "dedup", "mail", "op-1", "--release"))
		require.Equal(t, `deduplication id "op-1" of mail is free: the next add with it creates a job`+"\n", ok(t, b, "dedup", "mail", "op-1"))
		require.Equal(t, `deduplication id "op-1" of mail was free: nothing to release`+"\n", ok(t, b, "dedup", "mail", "op-1", "--release"))
		state, err := b.queue.GetJobState(ctx, held)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state, "the holder is left alone")
		again := add("op-1", 0)
		require.Equal(t, drover.AddCreated, again.Outcome, "the id is free again")

		_, err = run(t, b, "dedup", "mail")
		require.ErrorContains(t, err, "dedup needs <queue> <dedup-id>")
		_, err = run(t, b, "dedup", "mial", "op-1")
		require.ErrorContains(t, err, `no queue "mial"`)
	})

	t.Run("OrphansCountsThenRemoves", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		key := func(s string) string { return b.prefix + ":mail:" + s }
		require.NoError(t, b.rdb.HSet(ctx, key("lost1"), "name", "send").Err())
		require.NoError(t, b.rdb.HSet(ctx, key("lost2"), "name", "send").Err())
		require.NoError(t, b.rdb.RPush(ctx, key("lost3:logs"), "line").Err())
		counts, err := b.queue.GetJobCounts(ctx)
		require.NoError(t, err)

		require.Equal(t, "3 orphaned jobs in mail\n", ok(t, b, "orphans", "mail"))
		require.Equal(t, "3 orphaned jobs in mail\n", ok(t, b, "orphans", "mail", "--scan-count", "1"), "one key a SCAN step")
		require.EqualValues(t, 1, b.rdb.Exists(ctx, key("lost1")).Val(), "counting removes nothing")
		require.JSONEq(t, `{"queue":"mail","orphans":2}`, ok(t, b, "orphans", "mail", "--limit", "2", "--json"))
		require.Equal(t, "removed 2 orphaned jobs from mail\n", ok(t, b, "orphans", "mail", "--remove", "--limit", "2"))
		require.JSONEq(t, `{"queue":"mail","removed":1}`, ok(t, b, "orphans", "mail", "--remove", "--json"))
		require.Equal(t, "0 orphaned jobs in mail\n", ok(t, b, "orphans", "mail"))
		after, err := b.queue.GetJobCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, counts, after, "no job of any state removed")

		_, err = run(t, b, "orphans", "mail", "--limit", "-1")
		require.ErrorContains(t, err, "--limit must not be negative")
		_, err = run(t, b, "orphans", "mial")
		require.ErrorContains(t, err, `no queue "mial"`)
	})

	t.Run("PauseResumeVersionUnknownQueue", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.queue.Resume(ctx))
		require.Equal(t, "mail: paused\n", ok(t, b, "pause", "mail"))
		paused, err := b.queue.IsPaused(ctx)
		require.NoError(t, err)
		require.True(t, paused)
		require.Equal(t, "mail: resumed\n", ok(t, b, "resume", "mail"))
		paused, err = b.queue.IsPaused(ctx)
		require.NoError(t, err)
		require.False(t, paused)
		_, err = run(t, b, "pause", "mial")
		require.ErrorContains(t, err, `no queue "mial" under prefix "`+b.prefix+`"; known queues: mail`)
		var out bytes.Buffer
		require.NoError(t, (&Main{Stdout: &out}).Run(ctx, []string{"--version"}))
		require.Regexp(t, `^drover \S+.*go1\.\d+`, out.String())
	})

	t.Run("UnreachableRedis", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		err := (&Main{Stdout: &out}).Run(ctx, []string{"queues", "--redis", "redis://127.0.0.1:1/0"})
		// Said from one dial: the client's retries (20 dials) took 3.6 s
		// to end in "ping redis: dial tcp ...: connection refused".
		require.ErrorContains(t, err, "cannot reach Redis at 127.0.0.1:1 (db 0; set it with --redis or DROVER_REDIS_URL): nothing listens on 127.0.0.1:1 (connection refused)")
		require.NotContains(t, err.Error(), "\n", "one line")
		err = (&Main{Stdout: &out}).Run(ctx, []string{"queues", "--redis", "unix://" + filepath.Join(t.TempDir(), "redis.sock")})
		require.ErrorContains(t, err, "no socket file ")
		err = (&Main{Stdout: &out}).Run(ctx, []string{"queues", "--redis", "redis://no-such-host.invalid:6379"})
		require.ErrorContains(t, err, `cannot reach Redis at no-such-host.invalid:6379 (db 0; set it with --redis or DROVER_REDIS_URL): no host named "no-such-host.invalid"`)
		// The demo too, and before it prints anything about its queues.
		out.Reset()
		err = (&Main{Stdout: &out}).Run(ctx, []string{"demo", "--redis", "redis://127.0.0.1:1/0", "--dashboard", "off"})
		require.ErrorContains(t, err, "cannot reach Redis at 127.0.0.1:1 (db 0; set it with --redis or DROVER_REDIS_URL)")
		require.NotContains(t, out.String(), "queues \"demo\"")
		err = (&Main{Stdout: &out}).Run(ctx, []string{"queues", "--redis", "http://nope"})
		var usage *usageError
		require.ErrorAs(t, err, &usage)
		require.NoError(t, (&Main{Stdout: &out}).Run(ctx, []string{"retry", "-h"}))
		require.Contains(t, out.String(), "Usage: drover retry <queue>")
	})
}

// TestDemoServesDashboard: `drover demo` on the embedded engine prints the
// dashboard's URL, serves it while it runs, and stops cleanly.
func TestDemoServesDashboard(t *testing.T) {
	t.Parallel()
	var out testkit.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- (&Main{Stdout: &out, Stderr: &out}).Run(context.Background(), []string{"demo", "--for", "8s", "--dashboard", "127.0.0.1:0"})
	}()
	re := regexp.MustCompile(`dashboard: (http://127\.0\.0\.1:\d+/) `)
	var url string
	waitUntil(t, func() bool {
		m := re.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	for _, path := range []string{"healthz", "readyz", "api/overview", "metrics"} {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	require.NoError(t, <-done)
	s := out.String()
	require.Contains(t, s, "completed job")
	require.Contains(t, s, "failed    job")
	require.Contains(t, s, "stalled   job")
	require.Contains(t, s, "drover demo: stopped")
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDemoOnRealRedis is issue 12 defect 7: on a real Redis the demo picks a
// prefix of its own and refuses queues that exist, so its stalling worker
// never takes real jobs; it prints only events written while it runs.
func TestDemoOnRealRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	url := "redis://" + redistest.Shared(t).Addr
	imports, err := drover.NewQueue(rdb, "imports", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	old, err := imports.Add(ctx, "real-import", map[string]string{"file": "payroll.csv"}, nil)
	require.NoError(t, err)
	before, err := rdb.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)

	var out bytes.Buffer
	err = (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"demo", "--redis", url, "--prefix", prefix, "--for", "5s", "--dashboard", "off"})
	var usage *usageError
	require.ErrorAs(t, err, &usage, out.String())
	require.ErrorContains(t, err, `queue "imports" already exists under prefix "`+prefix+`"`)
	after, err := rdb.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)
	require.ElementsMatch(t, before, after, "the demo wrote nothing under the existing prefix")
	st, err := imports.GetJobState(ctx, old.Job.ID)
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, st, "the real job was not taken")

	out.Reset()
	require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"demo", "--redis", url, "--for", "3s", "--dashboard", "off"}))
	m := regexp.MustCompile(`queues "demo" and "imports" under prefix "(drover-demo-[0-9a-f]{6})"`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	require.NotContains(t, out.String(), "payroll")
	require.Contains(t, out.String(), `drover demo: stopped; its jobs stay in Redis under prefix "`+m[1]+`"`, "it says what it left")
	n, err := rdb.Exists(ctx, m[1]+":demo:meta", m[1]+":demo:id").Result()
	require.NoError(t, err)
	require.Positive(t, n, "the demo's jobs went under its own prefix")
	after, err = rdb.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)
	require.ElementsMatch(t, before, after)
}
