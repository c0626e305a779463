package lab_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/lab"
)

func TestEvaluate(t *testing.T) {
	t.Parallel()

	// counts builds a result of the scenario with the expected counts, then
	// lets the test change some.
	counts := func(sc lab.Scenario, safe bool, change func(r *lab.Result)) *lab.Result {
		e := lab.Expect(sc, safe)
		r := &lab.Result{
			Scenario: sc, Safe: safe, Expected: e,
			Executions: e.Executions, Effects: e.Effects, AttemptsMade: e.AttemptsMade,
			StalledCount: e.StalledCount, JobsCreated: e.JobsCreated,
		}
		if change != nil {
			change(r)
		}
		return r
	}

	tests := []struct {
		name     string
		result   *lab.Result
		ok       bool
		verdict  string
		problems []string
	}{
		{
			name:    "UnsafeShowsTheDuplicate",
			result:  counts(lab.ThrowAfterEffect, false, nil),
			ok:      true,
			verdict: "ok: duplicate effect reproduced (2x)",
		},
		{
			name:    "SafeWritesOnce",
			result:  counts(lab.KilledAfterEffect, true, nil),
			ok:      true,
			verdict: "ok: effect once, 1 duplicate execution(s) absorbed",
		},
		{
			name:    "SafeDuplicateProducerOneJob",
			result:  counts(lab.DuplicateProducer, true, nil),
			ok:      true,
			verdict: "ok: one job, effect once",
		},
		{
			name:     "SafeWithTwoEffectsFails",
			result:   counts(lab.ThrowAfterEffect, true, func(r *lab.Result) { r.Effects = 2 }),
			verdict:  "FAIL: effect written 2 times by a safe subject",
			problems: []string{"effect written 2 times by a safe subject"},
		},
		{
			name:     "SafeWithNoEffectFails",
			result:   counts(lab.ThrowAfterEffect, true, func(r *lab.Result) { r.Effects = 0 }),
			verdict:  "FAIL: 0 effects, expected 1",
			problems: []string{"0 effects, expected 1"},
		},
		{
			name: "UnsafeThatDidNotRunAgainFails",
			result: counts(lab.KilledAfterEffect, false, func(r *lab.Result) {
				r.Executions, r.Effects, r.StalledCount = 1, 1, 0
			}),
			verdict: "FAIL: the failure was not reproduced: 1 executions, expected 2 (+2 more)",
			problems: []string{
				"the failure was not reproduced: 1 executions, expected 2",
				"1 effects, expected 2",
				"stalled 0 times, expected 1",
			},
		},
		{
			name:     "DuplicateProducerWithTwoJobsFails",
			result:   counts(lab.DuplicateProducer, true, func(r *lab.Result) { r.JobsCreated, r.Executions, r.AttemptsMade = 2, 2, 2 }),
			verdict:  "FAIL: 2 executions, expected 1 (+2 more)",
			problems: []string{"2 executions, expected 1", "2 jobs created, expected 1", "2 attempts made, expected 1"},
		},
		{
			name:     "RunErrorFails",
			result:   counts(lab.ThrowAfterEffect, false, func(r *lab.Result) { r.Error = "throw-after-effect: boom" }),
			verdict:  "FAIL: throw-after-effect: boom",
			problems: []string{"throw-after-effect: boom"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.result.Evaluate()
			require.Equal(t, tt.ok, tt.result.OK)
			require.Equal(t, tt.verdict, tt.result.Verdict)
			require.Equal(t, tt.problems, tt.result.Problems)
		})
	}
}

func TestExpect(t *testing.T) {
	t.Parallel()

	// Issue 4, acceptance 1: unsafe 2 executions / 2 effects; safe 2
	// executions / 1 effect; duplicate producer with a deterministic id 1 job.
	for _, sc := range []lab.Scenario{lab.ThrowAfterEffect, lab.KilledAfterEffect} {
		require.Equal(t, [2]int{2, 2}, [2]int{lab.Expect(sc, false).Executions, lab.Expect(sc, false).Effects}, sc)
		require.Equal(t, [2]int{2, 1}, [2]int{lab.Expect(sc, true).Executions, lab.Expect(sc, true).Effects}, sc)
	}
	require.Equal(t, 2, lab.Expect(lab.DuplicateProducer, false).Effects)
	require.Equal(t, 2, lab.Expect(lab.DuplicateProducer, false).JobsCreated)
	require.Equal(t, 1, lab.Expect(lab.DuplicateProducer, true).JobsCreated)
	require.Equal(t, 1, lab.Expect(lab.KilledAfterEffect, true).StalledCount)
}

func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "sqlite")
	noop := func(context.Context, lab.Operation) error { return nil }
	count := func(context.Context, string) (int, error) { return 0, nil }
	cmd := func(lab.WorkerSpec) *exec.Cmd { return nil }

	tests := []struct {
		name string
		opts *lab.Options
		err  string
	}{
		{"KilledNeedsWorkerCommand", &lab.Options{Scenarios: []lab.Scenario{lab.KilledAfterEffect}},
			"lab: scenario killed-after-effect needs Options.WorkerCommand to start a worker process"},
		{"UnknownScenario", &lab.Options{Scenarios: []lab.Scenario{"nope"}},
			`lab: unknown scenario "nope" (want throw-after-effect, killed-after-effect or duplicate-producer)`},
		{"SubjectWithoutName", &lab.Options{Subjects: []lab.Subject{{Effect: noop, CountEffects: count}}},
			"lab: Subject.Name must not be empty"},
		{"SubjectNameWithColon", &lab.Options{Subjects: []lab.Subject{{Name: "a:b", Effect: noop, CountEffects: count}}},
			`lab: Subject.Name must not contain ':' or spaces, got "a:b"`},
		{"SubjectWithoutEffect", &lab.Options{Subjects: []lab.Subject{{Name: "x", CountEffects: count}}},
			`lab: Subject "x": Effect must be set`},
		{"SubjectWithoutCount", &lab.Options{Subjects: []lab.Subject{{Name: "x", Effect: noop}}},
			`lab: Subject "x": CountEffects must be set`},
		{"SubjectTwice", &lab.Options{WorkerCommand: cmd, Subjects: []lab.Subject{
			{Name: "x", Effect: noop, CountEffects: count}, {Name: "x", Effect: noop, CountEffects: count},
		}}, `lab: Options.Subjects has "x" twice`},
		{"LockDurationTooShort", &lab.Options{LockDuration: time.Millisecond},
			"lab: Options.LockDuration must be at least 4ms, got 1ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := lab.Run(ctx, b.rdb, b.db, tt.opts)
			require.EqualError(t, err, tt.err)
		})
	}

	t.Run("UnknownBuiltInSubject", func(t *testing.T) {
		t.Parallel()
		_, err := b.db.Subject("careful")
		require.EqualError(t, err, `lab: no built-in subject "careful" (want unsafe, safe or sabotaged)`)
	})
}

func TestWorkerSpec(t *testing.T) {
	t.Parallel()

	spec := lab.WorkerSpec{Prefix: "bull", Queue: "lab-x", Subject: "safe", LockDuration: 1500 * time.Millisecond}
	got, err := lab.DecodeWorkerSpec(spec.Encode())
	require.NoError(t, err)
	require.Equal(t, spec, got)

	_, err = lab.DecodeWorkerSpec(`{"queue":"q"}`)
	require.EqualError(t, err, `lab: worker spec {"queue":"q"}: queue, subject and lock_duration are required`)
	_, err = lab.DecodeWorkerSpec(`not json`)
	require.ErrorContains(t, err, "lab: decode worker spec: ")
}

func TestQueries(t *testing.T) {
	t.Parallel()

	// Both dialects have the same named queries, none empty.
	pg := lab.QueryNames(lab.NewPostgres(nil))
	lite := lab.QueryNames(lab.NewSQLite(nil))
	require.Len(t, pg, 9)
	for name, q := range pg {
		require.NotEmpty(t, q, name)
		require.NotEmpty(t, lite[name], name)
	}
	require.Len(t, lite, len(pg))
}
