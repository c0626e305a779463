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
	switch ReplyCode(err) {
	case "LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM", "UNBLOCKED",
		"MISCONF", "NOREPLICAS":
		return true
	}
	return false
}

// scriptWrapped begins the error of a script whose command met an error
// reply, on Redis before 7.0: "ERR Error running script (call to f_<sha>):
// @user_script:12: -OOM command not allowed when used memory > 'maxmemory'."
// Redis 7 passes the command's own reply through instead ("OOM command not
// allowed ... script: ...").
const scriptWrapped = "ERR Error running script"

// ReplyCode is the error code of err when it is an error reply of Redis
// ("OOM", "READONLY", "ERR", ...), else "". For a script's error on Redis
// before 7.0 it is the code of the command's reply the script met, read
// from the wrapped text (scriptWrapped), so callers judge a script call the
// same on 6.2 as on 7.
func ReplyCode(err error) string {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return ""
	}
	msg := reply.Error()
	code, _, _ := strings.Cut(msg, " ")
	if code != "ERR" || !strings.HasPrefix(msg, scriptWrapped) {
		return code
	}
	// The wrapped reply follows the ": "-separated locations, its code an
	// upper-case word (with or without the protocol's "-").
	parts := strings.Split(msg, ": ")
	for i := len(parts) - 1; i > 0; i-- {
		inner, _, _ := strings.Cut(strings.TrimPrefix(parts[i], "-"), " ")
		if isCode(inner) {
			return inner
		}
	}
	return code
}

// isCode reports whether s reads as an error code: upper-case letters only.
func isCode(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}
