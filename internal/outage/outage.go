// Package outage tells a Redis outage from a failed request. An outage
// error says Redis could not be reached or answered in time, or cannot
// serve for now; waiting and asking again is the answer to it. Any other
// error says the request itself failed, and asking again fails again.
package outage

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Is reports whether err is an outage: a refused, broken or timed-out
// connection, no free connection in the client's pool, or a reply that
// says the server cannot serve for now (loading its data, a replica since
// a failover, its master or cluster down, a slot migrating, busy with a
// script, out of memory, a blocking command ended by a failover, writes
// stopped because its last RDB snapshot or AOF write failed (MISCONF) or
// because fewer replicas follow it than min-replicas-to-write asks
// (NOREPLICAS)). A client closed by its owner is not an outage: it will not
// come back. Nor is any
// other reply: NOAUTH or WRONGPASS (the password changed), NOPERM (an ACL),
// WRONGTYPE or a script's error get the same answer however often asked.
func Is(err error) bool {
	if err == nil || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	code, _, _ := strings.Cut(reply.Error(), " ")
	switch code {
	case "LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM", "UNBLOCKED",
		"MISCONF", "NOREPLICAS":
		return true
	}
	return false
}
