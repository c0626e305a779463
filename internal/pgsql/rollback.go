package pgsql

import (
	"context"
	"time"
)

// RollbackTimeout bounds a rollback that must run although its caller's
// context ended.
const RollbackTimeout = 5 * time.Second

// RollbackContext returns the context for a rollback that must reach the
// database even when ctx ended or is what failed (else the connection would
// carry the open transaction on): detached from ctx's cancellation, and
// bounded by RollbackTimeout, since a database that does not answer (a
// network partition: no reset, no reply) would hold the caller forever. A
// rollback that runs out closes its connection, which ends the transaction
// on the server too.
func RollbackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), RollbackTimeout)
}
