package outbox

import (
	"context"
	"database/sql"
	"time"
)

// SetTestHooks makes the relay call the given functions at the steps of each
// batch; a non-nil error aborts the batch there, as a crash would. nil
// functions do nothing. Set them before the relay runs.
func SetTestHooks(r *Relay, beforeAdd, afterAdd, beforeCommit func(context.Context) error) {
	r.hooks = testHooks{beforeAdd: beforeAdd, afterAdd: afterAdd, beforeCommit: beforeCommit}
}

// SetSQLiteLease sets how long the claims of ob's relays hold their rows.
// Set it before any relay of ob runs.
func SetSQLiteLease(ob *Outbox[*sql.Tx], d time.Duration) { ob.store.(*sqlite).lease = d }
