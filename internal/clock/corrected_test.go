package clock_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/clock"
)

// steppable is the wall clock moved by a step the test sets; the
// monotonic clock does not move with it.
type steppable struct{ step atomic.Int64 }

func (s *steppable) Now() time.Time { return time.Now().Add(time.Duration(s.step.Load())) }

func TestCorrectedAcrossSteps(t *testing.T) {
	for _, step := range []time.Duration{time.Hour, -time.Hour, 2 * clock.StepTolerance, -2 * clock.StepTolerance} {
		t.Run(step.String(), func(t *testing.T) {
			host := &steppable{}
			c := clock.NewCorrected(host)
			c.SetOffset(5 * time.Second)
			near := func(want time.Time) {
				t.Helper()
				got := c.Now()
				require.Less(t, got.Sub(want).Abs(), 20*time.Millisecond, "now %s, want about %s", got, want)
			}
			near(time.Now().Add(5 * time.Second))
			require.False(t, c.Stepped())

			host.step.Store(int64(step))
			require.True(t, c.Stepped())
			near(time.Now().Add(5 * time.Second)) // the last measurement, carried on by the monotonic clock
			select {
			case <-c.Steps():
			default:
				t.Fatal("no step signalled")
			}
			near(time.Now().Add(5 * time.Second))
			select {
			case <-c.Steps():
				t.Fatal("a step is signalled once per measurement")
			default:
			}

			c.SetOffset(5*time.Second - step) // the measurement after the step
			require.False(t, c.Stepped())
			near(time.Now().Add(5 * time.Second))
			host.step.Store(int64(step + clock.StepTolerance/2)) // a slew, not a step
			require.False(t, c.Stepped())
			near(time.Now().Add(5*time.Second + clock.StepTolerance/2))
		})
	}
}
