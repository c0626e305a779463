package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/metrics"
)

func TestAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// "Promote the N delayed jobs" runs at most the N the operator
	// confirmed, those due first; jobs delayed after the page counted stay
	// delayed, and the reply says how many.
	t.Run("PromoteUpToTheConfirmedCount", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
		c := b.as(t, "")
		var ids []string
		for i, d := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour} {
			ids = append(ids, b.add(t, "q", fmt.Sprint("d", i), nil, &drover.JobOptions{Delay: d}))
		}
		// The page counted 2; a third job was delayed before the click.
		var res map[string]int64
		require.Equal(t, http.StatusOK, c.post("api/queues/q/promote", map[string]any{"limit": 2}, &res))
		require.Equal(t, map[string]int64{"promoted": 2, "left": 1}, res)
		b.waitState(t, "q", ids[1], drover.StateWaiting)
		b.waitState(t, "q", ids[2], drover.StateWaiting)
		b.waitState(t, "q", ids[0], drover.StateDelayed)
		entries := b.audit.all()
		last := entries[len(entries)-1]
		require.Equal(t, "promote-all", last.Action)
		require.Equal(t, 2, last.Jobs)
		require.Equal(t, "limit=2", last.Detail)
		require.Equal(t, []string{ids[1], ids[2]}, last.JobIDs, "the entry names the jobs promoted, due first")

		require.Equal(t, http.StatusBadRequest, c.post("api/queues/q/promote", map[string]any{"limit": -1}, nil))
		require.Equal(t, http.StatusBadRequest, c.post("api/queues/q/promote", map[string]any{"max": 1}, nil), "an unknown field is refused")
		b.waitState(t, "q", ids[0], drover.StateDelayed)
		// Without a limit every delayed job runs, as before.
		var all map[string]int64
		require.Equal(t, http.StatusOK, c.post("api/queues/q/promote", nil, &all))
		require.Equal(t, map[string]int64{"promoted": 1}, all)
		b.waitState(t, "q", ids[0], drover.StateWaiting)
		entries = b.audit.all()
		require.Equal(t, []string{ids[0]}, entries[len(entries)-1].JobIDs)
		// More than dashboard.AuditJobIDsMax: the first ones, due first.
		var many []string
		for i := range dashboard.AuditJobIDsMax + 5 {
			many = append(many, b.add(t, "q", "m", nil, &drover.JobOptions{Delay: time.Hour + time.Duration(i)*time.Second}))
		}
		require.Equal(t, http.StatusOK, c.post("api/queues/q/promote", nil, &all))
		require.Equal(t, map[string]int64{"promoted": int64(len(many))}, all)
		entries = b.audit.all()
		require.Equal(t, len(many), entries[len(entries)-1].Jobs)
		require.Equal(t, many[:dashboard.AuditJobIDsMax], entries[len(entries)-1].JobIDs)
	})

	t.Run("OverviewQueueJobsAndDetail", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.startWorker(t, "mail", func(ctx context.Context, job *drover.Job) (any, error) {
			if job.Name == "bounce" {
				return nil, errors.New("mailbox full")
			}
			return "sent", nil
		}, nil)
		ok := b.add(t, "mail", "send", nil, nil)
		bad := b.add(t, "mail", "bounce", nil, &drover.JobOptions{Attempts: 2})
		b.add(t, "reports", "build", nil, &drover.JobOptions{Delay: time.Hour})
		b.waitState(t, "mail", ok, drover.StateCompleted)
		b.waitState(t, "mail", bad, drover.StateFailed)
		c := b.as(t, "")

		var ov dashboard.Overview
		require.Equal(t, http.StatusOK, c.get("api/overview", &ov))
		require.Equal(t, b.prefix, ov.Prefix)
		require.Len(t, ov.Queues, 2)
		require.Equal(t, "mail", ov.Queues[0].Name)
		require.Equal(t, int64(1), ov.Queues[0].Counts.Failed)
		require.Empty(t, ov.Alerts)

		var qp dashboard.QueuePage
		require.Equal(t, http.StatusOK, c.get("api/queues/reports", &qp))
		require.Equal(t, int64(1), qp.Delayed.Count)
		require.Len(t, qp.Delayed.Buckets, 120)
		require.Equal(t, 0.5, qp.Storm.ClusterShare)

		var page inspect.JobPage
		require.Equal(t, http.StatusOK, c.get("api/queues/mail/jobs?state=failed&reason=MAILBOX&left=0", &page))
		require.Len(t, page.Jobs, 1)
		require.Equal(t, bad, page.Jobs[0].ID)
		require.Equal(t, http.StatusOK, c.get("api/queues/mail/jobs?state=failed&filter=name%3Dsend", &page))
		require.Empty(t, page.Jobs)
		require.Equal(t, http.StatusBadRequest, c.get("api/queues/mail/jobs?filter=bogus", nil))
		require.Equal(t, http.StatusBadRequest, c.get("api/queues/mail/jobs?state=nope", nil))
		for _, bad := range []string{"offset=-1", "offset=x", "limit=-1", "left=x", "asc=maybe", "after=x", "before=1:y:", "after=1::a&before=1::a"} {
			require.Equal(t, http.StatusBadRequest, c.get("api/queues/mail/jobs?state=failed&"+bad, nil), bad)
		}
		require.Equal(t, http.StatusOK, c.get("api/queues/mail/jobs?state=failed&asc=true", &page))
		require.Len(t, page.Jobs, 1)

		var d inspect.JobDetail
		require.Equal(t, http.StatusOK, c.get("api/queues/mail/jobs/"+bad, &d))
		require.Equal(t, inspect.RetryStateFailed, d.RetryState)
		require.Len(t, d.Timeline, 2)
		require.Equal(t, http.StatusNotFound, c.get("api/queues/mail/jobs/404", nil))
		// An id naming one of the queue's keys is bad input, not a job.
		for _, key := range []string{"meta", "wait", "events"} {
			require.Equal(t, http.StatusBadRequest, c.get("api/queues/mail/jobs/"+key, nil), key)
		}
		require.Equal(t, http.StatusNotFound, c.get("api/nope", nil))

		var st inspect.StalledReport
		require.Equal(t, http.StatusOK, c.get("api/queues/mail/stalled", &st))
		var br inspect.BudgetReport
		require.Equal(t, http.StatusOK, c.get("api/queues/mail/budgets", &br))
		var ds inspect.DelayedStats
		require.Equal(t, http.StatusOK, c.get("api/queues/reports/delayed", &ds))
		require.Equal(t, int64(1), ds.Count)
	})

	t.Run("BulkRetryDryRunThenRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
		b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New(job.Name + " failed")
		}, nil)
		var ids []string
		for _, name := range []string{"a", "b", "a"} {
			ids = append(ids, b.add(t, "q", name, nil, nil))
		}
		for _, id := range ids {
			b.waitState(t, "q", id, drover.StateFailed)
		}
		require.NoError(t, b.queue(t, "q").Pause(ctx))
		c := b.as(t, "")
		var res inspect.RetryResult
		require.Equal(t, http.StatusOK, c.post("api/queues/q/retry", dashboard.RetryJobsRequest{Filter: "name=a", DryRun: true}, &res))
		require.Equal(t, 2, res.Matched)
		require.Zero(t, res.Retried)
		op := c.bulkRetry("q", dashboard.RetryJobsRequest{Filter: "name=a", ResetAttempts: true})
		require.Equal(t, dashboard.OperationDone, op.Status)
		require.Equal(t, 2, op.Retried)
		require.Equal(t, http.StatusBadRequest, c.post("api/queues/q/retry", dashboard.RetryJobsRequest{Filter: "zzz"}, nil))

		// Mistakes are refused at once, before any job moves or any
		// operation starts: a misspelt dryRun (dry_run) must not run the real retry,
		// and a state that cannot be retried is not a failed operation later.
		var before, after struct{ Operations []dashboard.Operation }
		require.Equal(t, http.StatusOK, c.get("api/operations", &before))
		for _, body := range []map[string]any{
			{"filter": "name=b", "dry_run": true},
			{"filter": "name=b", "resetAttempt": true},
			{"state": "waiting"},
			{"limit": -1},
		} {
			require.Equal(t, http.StatusBadRequest, c.post("api/queues/q/retry", body, nil), "%v", body)
		}
		require.Equal(t, http.StatusOK, c.get("api/operations", &after))
		require.Len(t, after.Operations, len(before.Operations))

		state, err := b.queue(t, "q").GetJobState(ctx, ids[1])
		require.NoError(t, err)
		require.Equal(t, drover.StateFailed, state)
	})

	// A bad field of an action's body is named as the body names it: the
	// caller wrote "state" and "limit", not inspect.RetryOptions.State or
	// a ChunkSize it never sent; nothing is cleaned or retried.
	t.Run("BadFieldsNamedAsSent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
		id := b.add(t, "q", "keep", nil, nil)
		c := b.as(t, "")
		for _, tc := range []struct {
			path string
			body map[string]any
			want string
		}{
			{"api/queues/q/retry", map[string]any{"state": "waiting", "dryRun": true}, `state must be failed or completed (the states a bulk retry takes jobs from), got "waiting"`},
			{"api/queues/q/retry", map[string]any{"limit": -1}, `limit must not be negative, got -1`},
			{"api/queues/q/clean", map[string]any{"state": "waiting", "grace": "-1h"}, `grace must not be negative, got "-1h"`},
			{"api/queues/q/clean", map[string]any{"state": "waiting", "grace": "soon"}, `grace must be a duration such as 1h or 0s, got "soon"`},
			{"api/queues/q/clean", map[string]any{"state": "waiting", "grace": "0s", "limit": -5}, `limit must not be negative, got -5`},
		} {
			require.Equal(t, http.StatusBadRequest, c.post(tc.path, tc.body, nil), "%v", tc.body)
			var e struct{ Error string }
			require.NoError(t, json.Unmarshal(c.lastBody, &e))
			require.Equal(t, tc.want, e.Error)
		}
		state, err := b.queue(t, "q").GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state)
	})

	t.Run("BodyIsOneJSONObjectOfKnownFields", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
		id := b.add(t, "q", "keep", nil, nil)
		c := b.as(t, "")
		// A destructive action must not run on the part of a body that
		// parsed: more after the object, or a field the action does not
		// have, is refused before anything moves.
		for path, body := range map[string]rawBody{
			"api/queues/q/obliterate": `{"force":false} {"force":true}`,
			"api/queues/q/clean":      `{"state":"waiting","grace":"0s"} x`,
			"api/queues/q/pause":      `{"queue":"q"}`,
		} {
			require.Equal(t, http.StatusBadRequest, c.post(path, body, nil), path)
			require.Contains(t, string(c.lastBody), "bad request body", path)
		}
		state, err := b.queue(t, "q").GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state)
	})

	t.Run("HealthWithoutRedisReadyWith", func(t *testing.T) {
		t.Parallel()
		dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { _ = dead.Close() })
		ins, err := inspect.New(dead, nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
		h, err := dashboard.New(ins, nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		for path, want := range map[string]int{"/healthz": 200, "/readyz": 503} {
			resp, err := http.Get(srv.URL + path)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, want, resp.StatusCode, path)
			// No sign-in is needed here: no internal address in the answer.
			require.NotContains(t, string(body), "127.0.0.1", path)
		}
		// An API call while Redis is down is an outage (503, naming Redis),
		// not a server bug (500).
		for _, path := range []string{"/api/overview", "/api/queues/q/jobs?state=failed", "/api/queues/q/jobs/1", "/api/jobs/1"} {
			resp, err := http.Get(srv.URL + path)
			require.NoError(t, err)
			var body struct{ Error string }
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			resp.Body.Close()
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, path)
			require.Contains(t, body.Error, "Redis unavailable", path)
		}
	})

	t.Run("WriteToAReplicaIs503", func(t *testing.T) {
		t.Parallel()
		// During a failover a client can land on a replica: Redis refuses
		// writes (READONLY). That is an outage of the writable server, not
		// a bug: 503, naming Redis.
		rdb, prefix := newClient(t)
		q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		_, err = q.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		rrdb := redistest.Shared(t).Replica(t).Client(t)
		testkit.WaitFor(t, 20*time.Second, "the replica to sync", func() bool {
			n, err := rrdb.Exists(ctx, prefix+":q:meta").Result()
			return err == nil && n == 1
		})
		ins, err := inspect.New(rrdb, &inspect.Options{Prefix: prefix})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
		h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		c := (&testBundle{url: srv.URL + "/"}).as(t, "")
		require.Equal(t, http.StatusServiceUnavailable, c.post("api/queues/q/pause", nil, nil), "%s", c.lastBody)
		require.Contains(t, string(c.lastBody), "Redis unavailable")
	})

	t.Run("MountsUnderAPrefix", func(t *testing.T) {
		t.Parallel()
		rdb, prefix := newClient(t)
		ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
		h, err := dashboard.New(ins, nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
		mux := http.NewServeMux()
		mux.Handle("/admin/queues/", http.StripPrefix("/admin/queues", h))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		for _, path := range []string{"/admin/queues/", "/admin/queues/ui/app.js", "/admin/queues/api/overview", "/admin/queues/healthz"} {
			resp, err := http.Get(srv.URL + path)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
		}
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(srv.URL + "/admin/queues")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 3, resp.StatusCode/100)
		require.Equal(t, "/admin/queues/", resp.Header.Get("Location"))
		// Routers that pass the bare prefix on get the redirect from the handler.
		bare := httptest.NewServer(http.StripPrefix("/admin/queues", h))
		t.Cleanup(bare.Close)
		resp, err = noFollow.Get(bare.URL + "/admin/queues")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
		require.Equal(t, "/admin/queues/", resp.Header.Get("Location"))
	})

	t.Run("LiveEventsStream", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.add(t, "q", "first", nil, nil)
		req, err := http.NewRequest(http.MethodGet, b.url+"api/queues/q/events", nil)
		require.NoError(t, err)
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(rctx))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		sc := bufio.NewScanner(resp.Body)
		require.True(t, sc.Scan())
		require.Equal(t, "retry: 2000", sc.Text())
		require.True(t, sc.Scan())
		require.Equal(t, ": open", sc.Text(), "subscribed from here on")
		pos := readPosition(t, sc)
		require.Regexp(t, `^\d+-\d+$`, pos)
		id := b.add(t, "q", "x", nil, nil)
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "data: ") {
				break
			}
		}
		require.Contains(t, lines, "event: job")
		require.Contains(t, lines[len(lines)-1], `"name":"added"`)
		require.Contains(t, lines[len(lines)-1], `"jobId":"`+id+`"`)
	})

	// A page whose stream the browser gave up on (an error answer while
	// Redis was down) opens a new one after the position it last had: the
	// events written while it had none still arrive, and a stream the
	// browser reconnects itself resumes from the position it was told at
	// open, before any job event.
	t.Run("LiveEventsResume", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.add(t, "q", "first", nil, nil)
		open := func(query string, header string) (*http.Response, *bufio.Scanner) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"api/queues/q/events"+query, nil)
			require.NoError(t, err)
			if header != "" {
				req.Header.Set("Last-Event-ID", header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			t.Cleanup(func() { resp.Body.Close() })
			return resp, bufio.NewScanner(resp.Body)
		}
		resp, sc := open("", "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.True(t, sc.Scan())
		require.True(t, sc.Scan())
		pos := readPosition(t, sc)
		resp.Body.Close()

		missed := b.add(t, "q", "while-closed", nil, nil)
		for _, how := range []struct{ query, header string }{{"?after=" + pos, ""}, {"", pos}} {
			resp, sc := open(how.query, how.header)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var data string
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.HasPrefix(d, "{") {
					data = d
					break
				}
			}
			require.Contains(t, data, `"jobId":"`+missed+`"`, "resumed with %+v", how)
			resp.Body.Close()
		}

		for _, bad := range []struct{ query, header, names string }{
			{"?after=nope", "", "after"}, {"?after=1-x", "", "after"}, {"", "12", "Last-Event-ID"},
		} {
			resp, _ := open(bad.query, bad.header)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%+v", bad)
			require.Contains(t, string(body), bad.names+" must be an event id", "%+v", bad)
		}
	})
}

// readPosition reads the "position" event that opens a live-events stream
// and returns the position it names (its id and its data).
func readPosition(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	var lines []string
	for sc.Scan() && sc.Text() != "" {
		lines = append(lines, sc.Text())
	}
	require.Len(t, lines, 3, "%q", lines)
	id, ok := strings.CutPrefix(lines[0], "id: ")
	require.True(t, ok, "%q", lines)
	require.Equal(t, "event: position", lines[1])
	require.Equal(t, "data: "+id, lines[2])
	return id
}

// TestMetricsEndpoint is acceptance 5: /metrics parses as the Prometheus text
// format, and the counters move as jobs flow through a worker whose hooks
// feed the dashboard's registry.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := newClient(t)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	reg, err := metrics.NewRegistry(ins, nil)
	require.NoError(t, err)
	h, err := dashboard.New(ins, &dashboard.Options{Metrics: metrics.Handler(reg)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	scrape := func() map[string]float64 {
		resp, err := http.Get(srv.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		require.NoError(t, err)
		out := map[string]float64{}
		for name, f := range fams {
			for _, m := range f.GetMetric() {
				key := name
				for _, l := range m.GetLabel() {
					if l.GetName() != "queue" {
						key += "/" + l.GetValue()
					}
				}
				switch {
				case m.Counter != nil:
					out[key] += m.GetCounter().GetValue()
				case m.Gauge != nil:
					out[key] += m.GetGauge().GetValue()
				case m.Histogram != nil:
					out[key] += float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		return out
	}

	before := scrape()
	require.Zero(t, before["drover_jobs_completed_total"])
	q, err := drover.NewQueue(rdb, "flow", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "flow", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "fail" {
			return nil, errors.New("no")
		}
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix, Hooks: metrics.WorkerHooks(reg, "flow"), DrainDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
	for _, name := range []string{"ok", "ok", "fail"} {
		_, err := q.Add(ctx, name, nil, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)
	}
	var after map[string]float64
	testkit.WaitFor(t, 10*time.Second, "counters and gauges to move", func() bool {
		after = scrape()
		return after["drover_jobs_completed_total"] == 2 && after["drover_jobs_failed_total"] == 1 &&
			after["drover_queue_jobs/completed"] == 2
	})
	require.Equal(t, 1.0, after["drover_jobs_retried_total"])
	require.Equal(t, 1.0, after["drover_jobs_retries_exhausted_total"])
	require.Equal(t, 2.0, after["drover_job_duration_seconds/completed"])
	require.Equal(t, 1.0, after["drover_job_duration_seconds/retried"])
	require.Equal(t, 1.0, after["drover_job_duration_seconds/retries-exhausted"])
	require.Equal(t, 2.0, after["drover_queue_jobs/completed"])
	require.Equal(t, 1.0, after["drover_queue_jobs/failed"])
	require.Equal(t, 1.0, after["drover_inspect_up"])
}

func newClient(t *testing.T) (*redis.Client, string) {
	t.Helper()
	b := setup(t, nil)
	return b.rdb, b.prefix
}
