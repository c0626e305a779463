package scripts

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/seed40057009/drover/internal/keys"
)

// Scheduler script errors.
var (
	// ErrSchedulerIDCollision: a cron scheduler's next run id is taken by a
	// job that is not its waiting run (code -10).
	ErrSchedulerIDCollision = errors.New("job scheduler's next run id is taken by another job")
	// ErrSchedulerSlotsBusy: 32 consecutive `every` run ids are taken (code -11).
	ErrSchedulerSlotsBusy = errors.New("job scheduler's next 32 run slots are taken")
	// ErrSchedulerKeyTaken: a new scheduler's key "<queue>:repeat:<id>"
	// holds a job (the run "repeat:<other>:<ms>" of another scheduler) or
	// is not a hash (code -15).
	ErrSchedulerKeyTaken = errors.New("job scheduler id names another job's key, or a key that is not a scheduler's (ids \"<scheduler>:<ms>\" are the runs of <scheduler>)")
)

var (
	advanceScheduler   = load("advanceScheduler")
	upsertJobScheduler = load("upsertJobScheduler")
	removeJobScheduler = load("removeJobScheduler")
)

// AdvanceArgs create a scheduler's next run when a worker takes its
// current one.
type AdvanceArgs struct {
	SchedulerID string
	ProducerID  string // the run taken
	NextMs      int64  // cron schedulers; ignored for every
	Now         int64
	Opts        string // JSON of the next run's opts without jobId and delay
	Every       string // the run's repeat.every, "" = none
	Offset      string // the run's repeat.offset, "" = none
	Priority    int64
	LIFO        bool
	DedupID     string // the run's deduplication id (its "deid" field), "" = none
}

// AdvanceScheduler creates the next run; it returns its id, or "" when
// nothing was created (scheduler gone, stale run, next run exists).
func AdvanceScheduler(ctx context.Context, rdb Doer, k keys.Queue, a AdvanceArgs) (string, error) {
	return advanceScheduler.run(ctx, rdb, k, a.SchedulerID, a.ProducerID, a.NextMs, a.Now, a.Opts,
		a.Every, a.Offset, a.Priority, boolArg(a.LIFO), a.DedupID).Text()
}

// UpsertArgs create or replace a job scheduler.
type UpsertArgs struct {
	SchedulerID  string
	NextMs       int64 // cron schedulers; ignored for every
	Now          int64
	Name         string
	Every        int64 // ms, 0 = cron
	Pattern      string
	TZ           string
	Limit        int64 // 0 = none
	StartDate    int64 // ms, 0 = none
	EndDate      int64 // ms, 0 = none
	Offset       int64 // ms, 0 = none
	Data         string
	TemplateOpts string
	RunOpts      string // JSON of the run's opts without jobId and delay
	Priority     int64
	LIFO         bool
	// Call makes the upsert run once however often the client sends it
	// (include/once.lua): a resend after a lost reply gets the first run's
	// answer and writes nothing.
	Call Call
}

// UpsertJobScheduler stores the scheduler and its next run; it returns the
// run's id and delay.
func UpsertJobScheduler(ctx context.Context, rdb Doer, k keys.Queue, a UpsertArgs) (string, int64, error) {
	opt := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	res, err := upsertJobScheduler.run(ctx, rdb, k, a.SchedulerID, a.NextMs, a.Now, a.Name, opt(a.Every),
		a.Pattern, a.TZ, opt(a.Limit), opt(a.StartDate), opt(a.EndDate), opt(a.Offset), a.Data,
		a.TemplateOpts, a.RunOpts, a.Priority, boolArg(a.LIFO), a.Call.Token, a.Call.ttlMs()).Result()
	if err != nil {
		return "", 0, err
	}
	switch t := res.(type) {
	case int64:
		return "", 0, codeError(t)
	case []any:
		if len(t) == 2 {
			return str(t[0]), toInt(t[1]), nil
		}
	}
	return "", 0, fmt.Errorf("upsertJobScheduler: malformed reply %v", res)
}

// RemoveJobScheduler deletes the scheduler and its delayed next run; it
// reports whether the scheduler existed.
func RemoveJobScheduler(ctx context.Context, rdb Doer, k keys.Queue, call Call, id string) (bool, error) {
	n, err := removeJobScheduler.run(ctx, rdb, k, id, call.Token, call.ttlMs()).Int64()
	return n == 1, err
}

// featureScripts are the scripts of job schedulers, flows and job control,
// kept apart from All's list so each feature adds its own.
func featureScripts() []*script {
	return []*script{advanceScheduler, upsertJobScheduler, removeJobScheduler, addFlow, moveToWaitingChildren, cancelJob,
		removeDedupKey, getCountsPerPriority, removeChildDependency, removeUnprocessedChildren, removeOrphanedJobs,
		readSummaries, removeRateLimitKey}
}
