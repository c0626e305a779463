package inspect

import "time"

// SetNow replaces the Inspector's clock (tests only).
func SetNow(i *Inspector, now func() time.Time) { i.now = now }
