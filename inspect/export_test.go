package inspect

import (
	"context"
	"time"
)

// SetNow replaces the Inspector's clock (tests only).
func SetNow(i *Inspector, now func() time.Time) {
	i.now = func(context.Context) time.Time { return now() }
}

// CachedQueues counts the cached queue handles (tests only).
func CachedQueues(i *Inspector) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.queues)
}

// SetHostClock replaces the clock of the machine the Inspector runs on
// (tests only): the clock it corrects by Redis TIME.
func SetHostClock(i *Inspector, now func() time.Time) { i.clock = newServerClock(i.rdb, now) }
