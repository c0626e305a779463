package interoptest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestDifferentialRetentionAgeZero: removeOnComplete/removeOnFail with an
// age of 0 (or less) is an age bound like any other in BullMQ: every job
// finished by now is old enough, so the finish removes all of them, the
// finishing job included, newest first up to the limit. A drover worker
// removed only the finishing job and kept the older ones.
//
//	go test -count=1 -run 'TestDifferentialRetentionAgeZero' ./internal/interoptest/
func TestDifferentialRetentionAgeZero(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	done := bullmqoracle.SleepThen(5*time.Millisecond, bullmqoracle.FromData("behavior"))
	for _, tc := range []struct {
		name string
		opt  string
		keep map[string]any
	}{
		{"Completed", "removeOnComplete", map[string]any{"age": 0}},
		{"CompletedWithCount", "removeOnComplete", map[string]any{"age": 0, "count": 5}},
		{"CompletedWithLimit", "removeOnComplete", map[string]any{"age": 0, "limit": 2}},
		{"CompletedLimitZero", "removeOnComplete", map[string]any{"age": 0, "limit": 0, "count": 2}},
		{"Failed", "removeOnFail", map[string]any{"age": 0, "count": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bh := any(bullmqoracle.Echo())
			if tc.opt == "removeOnFail" {
				bh = bullmqoracle.Fail("broke")
			}
			differential(t, setup, func(s side, checkpoint func(string)) {
				for i := range 3 {
					s.nodeAdd(queueName, "old", map[string]any{"n": i, "behavior": bh}, nil)
				}
				s.work(queueName, done, 3)
				s.nodeAdd(queueName, "new", map[string]any{"n": 3, "behavior": bh}, map[string]any{tc.opt: tc.keep})
				s.work(queueName, done, 4)
				checkpoint(fmt.Sprintf("finished with %s %v", tc.opt, tc.keep))
			})
		})
	}
}
