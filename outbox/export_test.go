package outbox

import "context"

// SetTestHooks makes the relay call the given functions at the steps of each
// batch; a non-nil error aborts the batch there, as a crash would. nil
// functions do nothing. Set them before the relay runs.
func SetTestHooks(r *Relay, beforeAdd, afterAdd, beforeCommit func(context.Context) error) {
	r.hooks = testHooks{beforeAdd: beforeAdd, afterAdd: afterAdd, beforeCommit: beforeCommit}
}
