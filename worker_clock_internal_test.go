package drover

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestClockOffsetWithinItsUncertaintyIsZero: against a Redis on this
// machine (same clock), every measurement leaves the offset at zero. An
// estimate is only good to half its round trip; correcting by such a
// fraction of a millisecond moved add timestamps off the machine's clock,
// enough to stamp a job 1 ms after a Node worker on the same machine took
// it (TestInterop/DroverAddNodeProcess/IdleWorkerWakesOnAdd failed with
// processedOn 1796187315558 < timestamp 1796187315559).
func TestClockOffsetWithinItsUncertaintyIsZero(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr})
	defer func() { _ = rdb.Close() }()
	q, err := NewQueue(rdb, "clock", &QueueOptions{Prefix: redistest.UniquePrefix()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if !q.clocker.measure(ctx) {
			t.Fatal("measure failed")
		}
		if off := q.clocker.clock.Offset(); off != 0 {
			t.Fatalf("measurement %d: offset %s to a Redis on the same clock, want 0", i, off)
		}
	}
}
