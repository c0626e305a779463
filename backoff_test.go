package drover_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

func TestComputeBackoff(t *testing.T) {
	t.Parallel()
	fixedRand := func(v float64) func() float64 { return func() float64 { return v } }
	custom := map[string]drover.BackoffFunc{
		"linear": func(attemptsMade int, _ string, _ error, _ *drover.Job) time.Duration {
			return time.Duration(attemptsMade) * 100 * time.Millisecond
		},
		"stop":     func(int, string, error, *drover.Job) time.Duration { return drover.BackoffStop },
		"minus5s":  func(int, string, error, *drover.Job) time.Duration { return -5 * time.Second },
		"minus1ms": func(int, string, error, *drover.Job) time.Duration { return -time.Millisecond },
		"now":      func(int, string, error, *drover.Job) time.Duration { return 0 },
	}
	tests := []struct {
		name     string
		backoff  *drover.Backoff
		attempts int
		rand     float64
		want     time.Duration
		wantErr  string
	}{
		{"NoBackoff", nil, 1, 0.5, 0, ""},
		{"Fixed", &drover.Backoff{Type: "fixed", Delay: time.Second}, 3, 0.5, time.Second, ""},
		{"FixedJitterLow", &drover.Backoff{Type: "fixed", Delay: time.Second, Jitter: 0.5}, 1, 0, 500 * time.Millisecond, ""},
		{"FixedJitterHigh", &drover.Backoff{Type: "fixed", Delay: time.Second, Jitter: 0.5}, 1, 0.999999, 999 * time.Millisecond, ""},
		{"FixedFullJitter", &drover.Backoff{Type: "fixed", Delay: time.Second, Jitter: 1}, 1, 0.25, 250 * time.Millisecond, ""},
		{"ExponentialFirst", &drover.Backoff{Type: "exponential", Delay: time.Second}, 1, 0.5, time.Second, ""},
		{"ExponentialSecond", &drover.Backoff{Type: "exponential", Delay: time.Second}, 2, 0.5, 2 * time.Second, ""},
		{"ExponentialFifth", &drover.Backoff{Type: "exponential", Delay: time.Second}, 5, 0.5, 16 * time.Second, ""},
		{"ExponentialJitter", &drover.Backoff{Type: "exponential", Delay: time.Second, Jitter: 0.2}, 3, 0.5, 3600 * time.Millisecond, ""},
		{"ExponentialJitterLowBound", &drover.Backoff{Type: "exponential", Delay: time.Second, Jitter: 0.2}, 3, 0, 3200 * time.Millisecond, ""},
		{"ExponentialRounds", &drover.Backoff{Type: "exponential", Delay: 3 * time.Millisecond}, 1, 0, 3 * time.Millisecond, ""},
		// Past what a Duration holds (BullMQ's float ms grow to Infinity):
		// the longest whole-ms Duration, never a wrapped-round value.
		{"ExponentialPastDuration35", &drover.Backoff{Type: "exponential", Delay: time.Second}, 35, 0.5, longestBackoff, ""},
		{"ExponentialPastDuration55", &drover.Backoff{Type: "exponential", Delay: time.Second}, 55, 0.5, longestBackoff, ""},
		{"ExponentialInfinity", &drover.Backoff{Type: "exponential", Delay: time.Second}, 2000, 0.5, longestBackoff, ""},
		{"ExponentialInfinityJitter", &drover.Backoff{Type: "exponential", Delay: time.Second, Jitter: 0.5}, 2000, 0.5, longestBackoff, ""},
		{"ExponentialNegativePastDuration", &drover.Backoff{Type: "exponential", Delay: -time.Second}, 60, 0.5, -longestBackoff, ""},
		{"ExponentialZeroTimesInfinity", &drover.Backoff{Type: "exponential"}, 2000, 0.5, 0, ""},
		{"Custom", &drover.Backoff{Type: "linear"}, 4, 0, 400 * time.Millisecond, ""},
		{"CustomStop", &drover.Backoff{Type: "stop"}, 1, 0, drover.BackoffStop, ""},
		// BullMQ stops only at -1 (ms); other negative delays retry now
		// through delayed, so they are returned as they are.
		{"CustomOtherNegativeKept", &drover.Backoff{Type: "minus5s"}, 1, 0, -5 * time.Second, ""},
		{"CustomMinus1msStops", &drover.Backoff{Type: "minus1ms"}, 1, 0, drover.BackoffStop, ""},
		{"FixedMinus1msStops", &drover.Backoff{Type: "fixed", Delay: -time.Millisecond}, 1, 0.5, drover.BackoffStop, ""},
		{"FixedMinus5msKept", &drover.Backoff{Type: "fixed", Delay: -5 * time.Millisecond}, 1, 0.5, -5 * time.Millisecond, ""},
		{"ExponentialMinus1msStopsFirst", &drover.Backoff{Type: "exponential", Delay: -time.Millisecond}, 1, 0.5, drover.BackoffStop, ""},
		{"ExponentialMinus1msSecondKept", &drover.Backoff{Type: "exponential", Delay: -time.Millisecond}, 2, 0.5, -2 * time.Millisecond, ""},
		// floor(0.5*-2*0.5 + -2*0.5) = floor(-1.5) = -2; at rand 0: -1, a stop.
		{"FixedJitterNegative", &drover.Backoff{Type: "fixed", Delay: -2 * time.Millisecond, Jitter: 0.5}, 1, 0.5, -2 * time.Millisecond, ""},
		{"FixedJitterNegativeStops", &drover.Backoff{Type: "fixed", Delay: -2 * time.Millisecond, Jitter: 0.5}, 1, 0, drover.BackoffStop, ""},
		{"CustomZeroRetriesNow", &drover.Backoff{Type: "now"}, 1, 0, 0, ""},
		{"UnknownCustom", &drover.Backoff{Type: "nope"}, 1, 0, 0, `unknown backoff strategy "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := drover.ComputeBackoff(tt.backoff, tt.attempts, errors.New("x"), nil, custom, fixedRand(tt.rand))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorIs(t, err, drover.ErrInvalidOption)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("JitterStaysInBounds", func(t *testing.T) {
		t.Parallel()
		b := &drover.Backoff{Type: "exponential", Delay: 100 * time.Millisecond, Jitter: 0.3}
		for attempt := 1; attempt <= 6; attempt++ {
			top := time.Duration(100<<(attempt-1)) * time.Millisecond
			for _, r := range []float64{0, 0.1, 0.5, 0.9, 0.99999} {
				got, err := drover.ComputeBackoff(b, attempt, nil, nil, nil, fixedRand(r))
				require.NoError(t, err)
				require.GreaterOrEqual(t, got, time.Duration(float64(top)*0.7)-time.Millisecond)
				require.Less(t, got, top)
			}
		}
	})
}

func BenchmarkComputeBackoff(b *testing.B) {
	rand := func() float64 { return 0.5 }
	for _, bo := range []*drover.Backoff{
		{Type: drover.BackoffFixed, Delay: time.Second},
		{Type: drover.BackoffExponential, Delay: time.Second, Jitter: 0.3},
	} {
		b.Run(bo.Type, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := drover.ComputeBackoff(bo, 4, nil, nil, nil, rand); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// longestBackoff is the longest Duration in whole milliseconds.
const longestBackoff = time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond
