package drover

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOutcome(t *testing.T) {
	t.Parallel()

	t.Run("EveryOutcomeHasOneRow", func(t *testing.T) {
		t.Parallel()

		names, stored := map[string]bool{}, map[string]bool{}
		for _, o := range Outcomes() {
			info := o.info()
			require.NotEmpty(t, info.name, "outcome %d has no row", o)
			require.NotEmpty(t, info.stored, "outcome %s has no stored code", o)
			require.False(t, names[info.name], "name %q twice", info.name)
			require.False(t, stored[info.stored], "stored code %q twice", info.stored)
			names[info.name], stored[info.stored] = true, true
			require.False(t, info.failed && info.retried, "%s both fails and retries", o)
			if info.failed {
				require.Equal(t, "f", info.kind, "%s fails the job: finishJobs kind f", o)
			}
		}
	})

	t.Run("StoredCodesNeverChange", func(t *testing.T) {
		t.Parallel()

		// Timelines in Redis hold these codes: a code, once written, keeps
		// its meaning. Add new outcomes with new codes; never edit this map.
		want := map[Outcome]string{
			OutcomeUnknown: "?", OutcomeCompleted: "c", OutcomeRetried: "r", OutcomeRetryDelayed: "d",
			OutcomeDelayed: "m", OutcomeRequeued: "w", OutcomeFailed: "f", OutcomeFailedUnrecoverable: "u",
			OutcomeRetriesExhausted: "x", OutcomeStalled: "s", OutcomeCancelled: "k", OutcomeTimedOut: "t",
			OutcomeWaitingChildren: "p", OutcomeRateLimited: "l",
		}
		require.Len(t, want, int(numOutcomes))
		for o, code := range want {
			require.Equal(t, code, o.info().stored, o.String())
		}
		for _, name := range []string{"cancelled", "timed-out"} {
			_, ok := ParseOutcome(name)
			require.True(t, ok, name)
		}
	})

	t.Run("TextRoundTrip", func(t *testing.T) {
		t.Parallel()

		for _, o := range Outcomes() {
			b, err := json.Marshal(o)
			require.NoError(t, err)
			var back Outcome
			require.NoError(t, json.Unmarshal(b, &back))
			require.Equal(t, o, back)
		}
		var o Outcome
		require.Error(t, o.UnmarshalText([]byte("nope")))
		require.Equal(t, "unknown", Outcome(200).String())
	})

	t.Run("Classes", func(t *testing.T) {
		t.Parallel()

		tests := []struct {
			o               Outcome
			failed, retried bool
		}{
			{OutcomeCompleted, false, false},
			{OutcomeRetried, false, true},
			{OutcomeRetryDelayed, false, true},
			{OutcomeDelayed, false, false},
			{OutcomeRequeued, false, false},
			{OutcomeFailed, true, false},
			{OutcomeFailedUnrecoverable, true, false},
			{OutcomeRetriesExhausted, true, false},
			{OutcomeStalled, false, false},
			{OutcomeCancelled, true, false},
			{OutcomeTimedOut, true, false},
			{OutcomeRateLimited, false, false},
		}
		for _, tt := range tests {
			require.Equal(t, tt.failed, tt.o.Failed(), tt.o.String())
			require.Equal(t, tt.retried, tt.o.Retried(), tt.o.String())
		}
	})
}

func TestTimelineRecord(t *testing.T) {
	t.Parallel()

	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	t.Run("DecodesVersion1", func(t *testing.T) {
		t.Parallel()

		// As drover wrote drover.attempts before the record had a version.
		v1 := `[` +
			`{"n":1,"start":"2026-01-02T03:04:05Z","end":"2026-01-02T03:04:06Z","outcome":"delayed","error":"boom","worker":"w1","backoff":20000000,"next":"2026-01-02T03:04:06.02Z"},` +
			`{"n":2,"start":"2026-01-02T03:04:07Z","end":"2026-01-02T03:04:08Z","outcome":"delayed","backoff":1000000000,"next":"2026-01-02T03:04:09Z"},` +
			`{"n":3,"start":"2026-01-02T03:04:10Z","end":"2026-01-02T03:04:11Z","outcome":"retry","error":"again"},` +
			`{"n":4,"start":"2026-01-02T03:04:12Z","end":"2026-01-02T03:04:13Z","outcome":"requeued","error":"worker closing"},` +
			`{"n":5,"start":"2026-01-02T03:04:14Z","end":"2026-01-02T03:04:15Z","outcome":"failed","error":"last"},` +
			`{"n":6,"start":"2026-01-02T03:04:16Z","end":"2026-01-02T03:04:17Z","outcome":"completed"}]`
		got := decodeTimeline(v1)
		require.Len(t, got, 6)
		require.Equal(t, Attempt{
			N: 1, Start: t0, End: t0.Add(time.Second), Outcome: OutcomeRetryDelayed, Error: "boom", Worker: "w1",
			Backoff: 20 * time.Millisecond, NextRun: t0.Add(time.Second + 20*time.Millisecond),
		}, got[0])
		outcomes := make([]Outcome, len(got))
		for i, a := range got {
			outcomes[i] = a.Outcome
		}
		require.Equal(t, []Outcome{OutcomeRetryDelayed, OutcomeDelayed, OutcomeRetried, OutcomeRequeued, OutcomeFailed, OutcomeCompleted}, outcomes)
	})

	t.Run("Version2IsFixed", func(t *testing.T) {
		t.Parallel()

		// The stored bytes do not depend on Attempt's field names: this
		// string changes only with a new record version.
		a := []Attempt{{N: 2, Start: t0, End: t0.Add(time.Second), Outcome: OutcomeRetriesExhausted, Error: "e", Worker: "w",
			Backoff: time.Millisecond, NextRun: t0.Add(2 * time.Second)}}
		const want = `[{"v":2,"n":2,"start":"2026-01-02T03:04:05Z","end":"2026-01-02T03:04:06Z","outcome":"x","error":"e","worker":"w","backoff":1000000,"next":"2026-01-02T03:04:07Z"}]`
		require.Equal(t, want, encodeTimeline(a))
		require.Equal(t, a, decodeTimeline(want))
	})

	t.Run("EveryOutcomeRoundTrips", func(t *testing.T) {
		t.Parallel()

		for _, o := range Outcomes() {
			a := []Attempt{{N: 1, Start: t0, End: t0, Outcome: o}}
			require.Equal(t, a, decodeTimeline(encodeTimeline(a)), o.String())
		}
	})

	t.Run("DamagedIsLostHistory", func(t *testing.T) {
		t.Parallel()

		require.Nil(t, decodeTimeline("{not json"))
	})
}
