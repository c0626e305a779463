package inspect_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

func TestParseFilter(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name    string
		in      string
		want    inspect.Filter
		wantErr string
	}{
		{name: "Empty", in: "  ", want: inspect.Filter{}},
		{name: "Name", in: "name=send-email", want: inspect.Filter{Name: "send-email"}},
		{name: "AllTermsCommas", in: "name=a,reason=timeout,left<=1", want: inspect.Filter{Name: "a", Reason: "timeout", MaxAttemptsLeft: ptr(1)}},
		{name: "QuotedReason", in: `reason="connection refused, again" attempts-left<=0`, want: inspect.Filter{Reason: "connection refused, again", MaxAttemptsLeft: ptr(0)}},
		{name: "UnknownKey", in: "queue=x", wantErr: `unknown term "queue=x"`},
		{name: "NotKeyValue", in: "timeout", wantErr: "is not key=value"},
		{name: "BadNumber", in: "left<=two", wantErr: "whole number"},
		{name: "NegativeNumber", in: "left<=-1", wantErr: "whole number"},
		{name: "Unterminated", in: `reason="oops`, wantErr: "unterminated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := inspect.ParseFilter(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			again, err := inspect.ParseFilter(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again, "String round-trips")
		})
	}
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()

	job := &drover.Job{Name: "pay", FailedReason: "Upstream TIMEOUT", AttemptsMade: 2, Opts: drover.JobOptions{Attempts: 3}}
	for _, tt := range []struct {
		name   string
		filter inspect.Filter
		want   bool
	}{
		{"ZeroMatchesAll", inspect.Filter{}, true},
		{"NameExact", inspect.Filter{Name: "pay"}, true},
		{"NameNotPrefix", inspect.Filter{Name: "pa"}, false},
		{"ReasonAnyCase", inspect.Filter{Reason: "timeout"}, true},
		{"ReasonMissing", inspect.Filter{Reason: "refused"}, false},
		{"LeftWithin", inspect.Filter{MaxAttemptsLeft: ptr(1)}, true},
		{"LeftAbove", inspect.Filter{MaxAttemptsLeft: ptr(0)}, false},
		{"AllMustMatch", inspect.Filter{Name: "pay", Reason: "refused"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.filter.Match(job))
		})
	}
}

func TestBudgetOf(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name string
		job  drover.Job
		want inspect.Budget
	}{
		{"DefaultIsOne", drover.Job{}, inspect.Budget{Allowed: 1, Left: 1}},
		{"PartlyUsed", drover.Job{AttemptsMade: 2, AttemptsStarted: 3, Opts: drover.JobOptions{Attempts: 4}}, inspect.Budget{Made: 2, Started: 3, Allowed: 4, Left: 2, Used: 0.5}},
		{"OverspentClampsLeft", drover.Job{AttemptsMade: 5, Opts: drover.JobOptions{Attempts: 3}}, inspect.Budget{Made: 5, Allowed: 3, Left: 0, Used: 5.0 / 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, inspect.BudgetOf(&tt.job))
		})
	}
}

func TestClassifyRetry(t *testing.T) {
	t.Parallel()

	failed := drover.Job{AttemptsMade: 1, FailedReason: "boom"}
	stalled := drover.Job{StalledCount: 1}
	for _, tt := range []struct {
		name  string
		state drover.JobState
		job   drover.Job
		want  inspect.RetryState
	}{
		{"New", drover.StateWaiting, drover.Job{}, inspect.RetryStateWaiting},
		{"Scheduled", drover.StateDelayed, drover.Job{}, inspect.RetryStateScheduled},
		{"Backoff", drover.StateDelayed, failed, inspect.RetryStateBackoff},
		{"Retrying", drover.StateWaiting, failed, inspect.RetryStateRetrying},
		{"RetryingPrioritized", drover.StatePrioritized, failed, inspect.RetryStateRetrying},
		{"RetriedByHand", drover.StateWaiting, drover.Job{AttemptsMade: 3}, inspect.RetryStateRetrying},
		{"StalledRecovered", drover.StateWaiting, stalled, inspect.RetryStateStalledRecovered},
		{"Active", drover.StateActive, failed, inspect.RetryStateActive},
		{"Failed", drover.StateFailed, failed, inspect.RetryStateFailed},
		{"Completed", drover.StateCompleted, drover.Job{AttemptsMade: 1}, inspect.RetryStateCompleted},
		{"Gone", drover.StateUnknown, drover.Job{}, inspect.RetryStateUnknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, inspect.ClassifyRetry(tt.state, &tt.job))
		})
	}
}
