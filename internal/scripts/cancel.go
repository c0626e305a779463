package scripts

import (
	"context"
	"strings"

	"github.com/seed40057009/drover/internal/keys"
)

var cancelJob = load("cancelJob")

// CancelResult is what CancelJob found at the job's lock.
type CancelResult int

// The results of CancelJob.
const (
	// CancelUnheard: a drover worker holds the lock but does not listen on
	// its cancel channel (its subscription is down).
	CancelUnheard CancelResult = 0
	// CancelDelivered: the worker holding the lock received the message.
	CancelDelivered CancelResult = 1
	// CancelForeign: the lock's token is not a drover worker's (Node BullMQ).
	CancelForeign CancelResult = 2
	// CancelEnded: the job was not running (waiting, paused, prioritized or
	// delayed) and is now failed.
	CancelEnded CancelResult = 3
	// CancelStale: the job's opts are not those Queued was read from (it
	// was replaced meanwhile); nothing was written.
	CancelStale CancelResult = 4
)

// Queued is how CancelJob ends a job that is not running: the failed job's
// reason, and its removeOnFail keep spec (include/retention.lua) read from
// the opts JSON Opts.
type Queued struct {
	NowMs        int64
	FailedReason string
	KeepSpec     string
	Opts         string
}

// CancelJob cancels job id in one step: a running job (its lock held) gets a
// cancel request, published to the drover worker holding the lock (the
// message is "<token>\n<flags>\n<reason>", ParseCancelMessage); a job that
// is not running fails for good as q says, unless retry (ErrNotInState: only
// a running attempt can be cancelled and retried). With running a job not
// locked is refused (ErrNotInState) and left queued, as with retry; with
// notRunning a locked job is refused (ErrNotInState) and left to its worker. ErrJobNotFound when
// there is no job, ErrNotInState when it is neither locked nor queued.
//
// call makes a resend of the command whose reply was lost (go-redis retries
// it) answer CancelEnded again instead of finding the job failed.
func CancelJob(ctx context.Context, rdb Doer, k keys.Queue, call Call, id string, retry, running, notRunning bool, reason string, q Queued) (CancelResult, error) {
	flags := ""
	if retry {
		flags = "r"
	}
	if running {
		flags += "a"
	}
	if notRunning {
		flags += "q"
	}
	n, err := runCode(ctx, cancelJob, rdb, k, id, flags, reason, k.CancelChannel(""),
		q.NowMs, q.FailedReason, q.KeepSpec, q.Opts, call.Token, call.ttlMs())
	return CancelResult(n), err
}

// CancelMessage is a cancel request as a worker receives it.
type CancelMessage struct {
	Token  string // the lock token of the attempt to cancel
	Retry  bool   // the job is retried per its attempts instead of failing
	Reason string
}

// ParseCancelMessage reads a message cancelJob.lua published; ok is false
// for anything else.
func ParseCancelMessage(payload string) (m CancelMessage, ok bool) {
	token, rest, ok1 := strings.Cut(payload, "\n")
	flags, reason, ok2 := strings.Cut(rest, "\n")
	if !ok1 || !ok2 || token == "" {
		return m, false
	}
	return CancelMessage{Token: token, Retry: strings.Contains(flags, "r"), Reason: reason}, true
}
