package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCLIActionsAreAudited runs the drover command's operator actions and
// reads them back through a dashboard's GET /api/audit: the same durable
// log and action names as the dashboard's own, who ran them (via cli), the
// outcome, and no entry for a dry run or a read.
func TestCLIActionsAreAudited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) error {
		var out bytes.Buffer
		m := Main{Stdout: &out, Stderr: &out}
		err := m.Run(ctx, append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
		require.NotContains(t, out.String(), "not recorded in the audit log")
		return err
	}
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "later", nil, &drover.JobOptions{JobID: "d1", Delay: time.Hour})
	require.NoError(t, err)

	require.NoError(t, run("scheduler", "upsert", "mail", "digest", "--every", "1h"))
	require.NoError(t, run("schedulers", "mail"))
	require.NoError(t, run("scheduler", "remove", "mail", "digest"))
	require.Error(t, run("scheduler", "remove", "mail", "digest"))
	require.Error(t, run("cancel", "mail", "nope", "--reason", "typo"))
	require.NoError(t, run("promote", "mail", "d1"))
	require.NoError(t, run("pause", "mail"))
	require.NoError(t, run("resume", "mail"))
	require.NoError(t, run("retry", "mail", "--dry-run"))
	require.NoError(t, run("clean", "mail", "--state", "waiting", "--grace", "0", "--yes"))
	_, err = q.Add(ctx, "once", nil, &drover.JobOptions{JobID: "o1", Deduplication: &drover.Deduplication{ID: "op-1"}})
	require.NoError(t, err)
	require.NoError(t, run("dedup", "mail", "op-1"))
	require.NoError(t, run("dedup", "mail", "op-1", "--release"))
	require.NoError(t, run("limits", "mail"))
	require.NoError(t, run("limits", "mail", "--concurrency", "3", "--unblock"))
	require.NoError(t, rdb.HSet(ctx, prefix+":mail:lost", "name", "lost").Err())
	require.NoError(t, run("orphans", "mail"))
	require.NoError(t, run("orphans", "mail", "--remove"))

	page := readAudit(t, rdb, prefix)

	type row struct{ Action, Queue, JobID, Outcome string }
	var got []row
	for i := len(page.Entries) - 1; i >= 0; i-- { // oldest first
		e := page.Entries[i]
		require.Equal(t, "cli", e.Via, "%+v", e)
		require.NotEmpty(t, e.User, "%+v", e)
		require.Equal(t, dashboard.AuditActions, e.Log)
		require.WithinDuration(t, time.Now(), e.Time, time.Minute)
		got = append(got, row{e.Action, e.Queue, e.JobID, e.Outcome})
	}
	require.Equal(t, []row{
		{"upsert-scheduler", "mail", "", "ok"},
		{"remove-scheduler", "mail", "", "ok"},
		{"remove-scheduler", "mail", "", "error"},
		{"cancel-job", "mail", "nope", "error"},
		{"promote-job", "mail", "d1", "ok"},
		{"pause", "mail", "", "ok"},
		{"resume", "mail", "", "ok"},
		{"clean", "mail", "", "ok"},
		{"release-dedup", "mail", "o1", "ok"},
		{"set-limits", "mail", "", "ok"},
		{"remove-orphans", "mail", "", "ok"},
	}, got)
	require.Equal(t, 1, page.Entries[0].Jobs, "one orphan removed")
	require.Equal(t, "limit=0", page.Entries[0].Detail)
	require.Equal(t, "concurrency=3 unblock", page.Entries[1].Detail)
	page.Entries = page.Entries[2:] // the entries before the limits and the orphans
	clean := page.Entries[1]
	require.Equal(t, 2, clean.Jobs, "cleaned from wait: the promoted job and the scheduler's first run")
	require.Contains(t, page.Entries[len(page.Entries)-1].Detail, "scheduler=digest every=1h0m0s")
	require.Contains(t, page.Entries[5].Error, "job not found")
	require.Equal(t, `dedup="op-1" released=true`, page.Entries[0].Detail)
}

// readAudit reads the action log under prefix, newest first, through a
// dashboard's GET /api/audit (the way an admin reads it).
func readAudit(t *testing.T, rdb redis.UniversalClient, prefix string) dashboard.AuditPage {
	t.Helper()
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	const token = "an-admin-token-of-sufficient-length"
	h, err := dashboard.New(ins, &dashboard.Options{Auth: &dashboard.Auth{Users: []dashboard.User{{Name: "ada", Role: dashboard.RoleAdmin, Token: token}}},
		Audit: func(context.Context, dashboard.AuditEntry) {}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
	req := httptest.NewRequest(http.MethodGet, "/api/audit", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var page dashboard.AuditPage
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	return page
}
