package interoptest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/difftest"
)

// TestInteropSchedulerOptsNames: GetJobScheduler gives a template's
// options under BullMQ's names, as Node's getJobScheduler does, whatever
// short name they are stored under (kl, fpof, tm, omc), so that
// ParseJobOptions reads them. It gave the stored JSON, which
// ParseJobOptions refused ("unknown job option kl").
func TestInteropSchedulerOptsNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newSetup(t)(t)
	start := time.Now().Add(time.Hour).UnixMilli()
	for _, tc := range []struct {
		id   string
		opts map[string]any
		want drover.JobOptions
	}{
		{"keepLogs", map[string]any{"keepLogs": 2, "attempts": 3}, drover.JobOptions{KeepLogs: 2, Attempts: 3}},
		{"policy", map[string]any{"failParentOnFailure": true, "priority": 4}, drover.JobOptions{ParentPolicy: drover.FailParent, Priority: 4}},
		{"telemetry", map[string]any{"telemetry": map[string]any{"metadata": "m1", "omitContext": true}}, drover.JobOptions{}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, tc.id, map[string]any{"every": 3_600_000, "startDate": start},
				map[string]any{"name": "n", "data": map[string]any{"x": 1}, "opts": tc.opts})
			require.NoError(t, err)
			ns, err := b.oracle.GetJobScheduler(ctx, b.prefix, queueName, tc.id)
			require.NoError(t, err)
			require.NotNil(t, ns)
			nodeOpts, err := json.Marshal(ns.Template.Opts)
			require.NoError(t, err)

			ds, err := b.dq.GetJobScheduler(ctx, tc.id)
			require.NoError(t, err)
			require.JSONEq(t, string(nodeOpts), ds.Opts, "Node's read and drover's")
			if tc.id == "telemetry" {
				return // JobOptions has no telemetry metadata to compare
			}
			o, err := drover.ParseJobOptions([]byte(ds.Opts))
			require.NoError(t, err)
			require.Equal(t, tc.want.KeepLogs, o.KeepLogs)
			require.Equal(t, tc.want.Attempts, o.Attempts)
			require.Equal(t, tc.want.Priority, o.Priority)
			require.Equal(t, tc.want.ParentPolicy, o.ParentPolicy)
		})
	}
}

// TestDifferentialSchedulerReadKeepLogs: the campaign's first getSchedulers
// divergence (seed 965958298): drover read a template with keepLogs as
// {"kl":2}, Node as {"keepLogs":2}.
func TestDifferentialSchedulerReadKeepLogs(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 965958298, Steps: []difftest.Step{
		{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j4", Data: map[string]any{"n": 4}, KeepLogs: 2}, Scheduler: &difftest.Scheduler{ID: "s2", Every: 0, Pattern: "*/30 * * * *", Start: 10800000, Limit: 1}},
		{Op: difftest.OpGetSchedulers, By: difftest.Drover},
		{Op: difftest.OpGetScheduler, By: difftest.Drover, Scheduler: &difftest.Scheduler{ID: "s2"}},
	}})
}
