package inspect

import "time"

// SetNow replaces the Inspector's clock (tests only).
func SetNow(i *Inspector, now func() time.Time) { i.now = now }

// CachedQueues counts the cached queue handles (tests only).
func CachedQueues(i *Inspector) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.queues)
}
