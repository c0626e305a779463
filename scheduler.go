package drover

// Job schedulers (BullMQ's upsertJobScheduler): a scheduler is a template
// and a timetable; each run is an ordinary job "repeat:<id>:<ms>". The
// worker that takes a run creates the next one, as Node BullMQ's workers
// do, so drover and Node workers can share one scheduler.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/outage"
	"github.com/seed40057009/drover/internal/schedule"
	"github.com/seed40057009/drover/internal/scripts"
)

// Scheduler errors.
var (
	// ErrJobSchedulerNotFound: no job scheduler with that id exists.
	ErrJobSchedulerNotFound = errors.New("job scheduler not found")
	// ErrSchedulerIDCollision: a cron scheduler's next run id is taken by a
	// job that is not the scheduler's waiting run.
	ErrSchedulerIDCollision = scripts.ErrSchedulerIDCollision
	// ErrSchedulerSlotsBusy: the next 32 run ids of an every-scheduler are
	// all taken.
	ErrSchedulerSlotsBusy = scripts.ErrSchedulerSlotsBusy
)

// RepeatOptions say when a job scheduler runs (BullMQ's RepeatOptions).
// Exactly one of Every and Pattern is set.
type RepeatOptions struct {
	// Every runs the scheduler at a fixed interval, stored in whole ms.
	Every time.Duration
	// Pattern is a cron pattern (5 fields, or 6 with seconds first, or
	// one of cron-parser's @ aliases such as @daily or @weekdays),
	// evaluated in TZ; see internal/schedule for the syntax (7 for Sunday,
	// L, 5L, 1#2, H drawn at random) and the daylight-saving rules, which
	// are cron-parser's (BullMQ's).
	Pattern string
	// TZ is the pattern's IANA time zone. "" = the local time zone of the
	// process computing the run (time.Local), as for Node's workers. The
	// spellings BullMQ's cron-parser takes are taken too: any letter case
	// ("europe/paris"), "utc", "local", fixed offsets such as "UTC+3".
	TZ string
	// StartDate delays the first run to this time. Zero = none.
	StartDate time.Time
	// EndDate stops the scheduler after this time. Zero = none.
	EndDate time.Time
	// Limit bounds the number of runs. 0 = no limit.
	Limit int
	// Immediately makes a cron scheduler's first run happen now instead of
	// at the pattern's next time. (An every-scheduler always starts now.)
	Immediately bool
	// Offset shifts an every-scheduler's runs within the interval: runs are
	// due at multiples of Every plus Offset. 0 = aligned to the first run.
	Offset time.Duration
}

// JobTemplate is what each run of a scheduler is made of.
type JobTemplate struct {
	// Name of each run. "" = the scheduler id.
	Name string
	// Data of each run, encoded with encoding/json. nil, or a value that
	// encodes to JSON null, = {} (as Node's `data ?? {}`).
	Data any
	// Opts of each run. JobID, Delay, RunAt, Timestamp and Deduplication must not
	// be set: the scheduler decides them. The queue's DefaultJobOptions fill
	// in what Opts leaves unset; a default Delay is stored with the template,
	// as BullMQ stores it, and delays no run.
	Opts *JobOptions
}

// JobScheduler is a stored job scheduler (BullMQ's JobSchedulerJson).
type JobScheduler struct {
	// ID is the scheduler's id (BullMQ's key).
	ID   string
	Name string
	// Next is when the scheduler's next run is due.
	Next time.Time
	// Iterations counts the runs made so far (BullMQ's iterationCount).
	Iterations int
	Every      time.Duration
	Pattern    string
	TZ         string
	Limit      int
	StartDate  time.Time
	EndDate    time.Time
	Offset     time.Duration
	// Data is the template's data as JSON ({} when none).
	Data json.RawMessage
	// Opts is the template's job options as JSON under BullMQ's option
	// names, as Node's getJobScheduler gives them and ParseJobOptions
	// reads them: the names stored short (kl, de, fpof, cpof, idof, rdof,
	// tm, omc) are given their long names back, every value as stored
	// ("" when none).
	Opts string
}

// UpsertJobScheduler creates the job scheduler id, or replaces it, and
// adds its next run, which it returns. Replacing a scheduler whose next run
// is still waiting replaces that run (an every-scheduler whose interval did
// not change keeps its due time). Returns (nil, nil) when the scheduler has
// nothing left to run (EndDate or Limit reached), as BullMQ does.
func (q *Queue) UpsertJobScheduler(ctx context.Context, id string, repeat RepeatOptions, tmpl *JobTemplate) (*Job, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	fail := func(err error) (*Job, error) {
		return nil, fmt.Errorf("upsert job scheduler %q in queue %q: %w", id, q.name, err)
	}
	if tmpl == nil {
		tmpl = &JobTemplate{}
	}
	now := q.now(ctx)
	sched, err := validateRepeat(id, &repeat, now)
	if err != nil {
		return fail(err)
	}
	// The template's own options are checked, not the queue's defaults:
	// a DefaultJobOptions.Delay is no mistake of the template's. BullMQ
	// merges a Queue's defaultJobOptions into the template's opts and
	// stores them so, delay included; the schedule still decides when each
	// run is due (its run opts' delay is the schedule's).
	if t := tmpl.Opts; t != nil && (t.JobID != "" || t.Delay != 0 || !t.RunAt.IsZero() || !t.Timestamp.IsZero() || t.Deduplication != nil) {
		return fail(optionError("JobTemplate.Opts must not set JobID, Delay, RunAt, Timestamp or Deduplication"))
	}
	o := tmpl.Opts.merged(q.opts.DefaultJobOptions)
	if err := o.validate(); err != nil {
		return fail(err)
	}
	if err := q.checkBackoffType(o.Backoff); err != nil {
		return fail(err)
	}
	name := tmpl.Name
	if name == "" {
		name = id
	}
	data, err := jobcodec.EncodeData(tmpl.Data)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrInvalidData, err))
	}
	if string(data) == "null" {
		// BullMQ's upsertJobScheduler takes `data ?? {}`: a template whose
		// data is null (json.RawMessage("null"), a nil pointer) is stored
		// and run as {}, as a nil Data is.
		data = []byte("{}")
	}
	stored := o.stored()
	templateOpts := map[string]json.RawMessage{}
	if err := json.Unmarshal(stored.AppendJSON(nil), &templateOpts); err != nil {
		return fail(err)
	}
	if o.Attempts == 0 {
		delete(templateOpts, "attempts") // Node stores a template's opts as given
	}
	nowMs := now.UnixMilli()
	var next int64
	if sched != nil {
		from := nowMs
		if !repeat.StartDate.IsZero() && repeat.StartDate.UnixMilli() > from {
			from = repeat.StartDate.UnixMilli()
		}
		if repeat.Immediately {
			next = nowMs
		} else {
			t, err := sched.Next(time.UnixMilli(from))
			if errors.Is(err, schedule.ErrNoRun) || (err == nil && !repeat.EndDate.IsZero() && t.After(repeat.EndDate)) {
				return nil, nil // no run left before EndDate
			}
			if err != nil {
				return fail(err)
			}
			next = max(t.UnixMilli(), nowMs)
		}
	}
	runRepeat := map[string]json.RawMessage{"count": json.RawMessage("1")}
	if repeat.Every > 0 {
		runRepeat["every"] = jsonInt(repeat.Every.Milliseconds())
		if repeat.Offset > 0 {
			runRepeat["offset"] = jsonInt(repeat.Offset.Milliseconds())
		}
	} else {
		runRepeat["pattern"] = jsonString(repeat.Pattern)
	}
	if repeat.TZ != "" {
		runRepeat["tz"] = jsonString(repeat.TZ)
	}
	if repeat.Limit > 0 {
		runRepeat["limit"] = jsonInt(int64(repeat.Limit))
	}
	if !repeat.StartDate.IsZero() {
		runRepeat["startDate"] = jsonInt(repeat.StartDate.UnixMilli())
	}
	if !repeat.EndDate.IsZero() {
		runRepeat["endDate"] = jsonInt(repeat.EndDate.UnixMilli())
	}
	runOpts := make(map[string]json.RawMessage, len(templateOpts)+4)
	for k, v := range templateOpts {
		runOpts[k] = v
	}
	delete(runOpts, "delay") // the script writes the run's own
	runOpts["repeat"] = mustJSON(runRepeat)
	runOpts["repeatJobKey"] = jsonString(id)
	runOpts["timestamp"] = jsonInt(nowMs)
	if sched != nil {
		runOpts["prevMillis"] = jsonInt(next)
	}
	a := scripts.UpsertArgs{
		SchedulerID: id, NextMs: next, Now: nowMs, Name: name,
		Every: repeat.Every.Milliseconds(), Pattern: repeat.Pattern, TZ: repeat.TZ,
		Limit: int64(repeat.Limit), Data: string(data),
		TemplateOpts: string(mustJSON(templateOpts)), RunOpts: string(mustJSON(runOpts)),
		Priority: int64(o.Priority), LIFO: o.LIFO,
		// go-redis sends the script again when its reply is lost: the
		// token makes the resend answer the first run's reply instead of
		// running again over a run a worker took meanwhile.
		Call: q.call(),
	}
	if !repeat.StartDate.IsZero() {
		a.StartDate = repeat.StartDate.UnixMilli()
	}
	if !repeat.EndDate.IsZero() {
		a.EndDate = repeat.EndDate.UnixMilli()
	}
	if repeat.Every > 0 {
		a.Offset = repeat.Offset.Milliseconds()
	}
	runID, delay, err := scripts.UpsertJobScheduler(ctx, q.writes(), q.k, a)
	if errors.Is(err, scripts.ErrSchedulerKeyTaken) {
		err = fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	if err != nil {
		return fail(err)
	}
	job, err := q.GetJob(ctx, runID)
	if err != nil {
		// A worker may have run it already and dropped it (removeOnComplete).
		job = &Job{ID: runID, Name: name, Data: data, Delay: time.Duration(delay) * time.Millisecond,
			JobSchedulerID: id, queue: q}
	}
	return job, nil
}

// validateRepeat checks repeat and parses its pattern (nil for Every).
func validateRepeat(id string, r *RepeatOptions, now time.Time) (*schedule.Schedule, error) {
	switch {
	case id == "":
		return nil, optionError("job scheduler id must not be empty")
	case r.Every != 0 && r.Pattern != "":
		return nil, optionError("RepeatOptions: Every and Pattern are both set; set one")
	case r.Every == 0 && r.Pattern == "":
		return nil, optionError("RepeatOptions: set Every or Pattern")
	case r.Every < 0 || (r.Every > 0 && r.Every < time.Millisecond):
		return nil, optionError("RepeatOptions.Every must be at least 1ms, got %s", r.Every)
	case r.Immediately && !r.StartDate.IsZero():
		return nil, optionError("RepeatOptions: Immediately and StartDate are both set; set one")
	case r.Limit < 0:
		return nil, optionError("RepeatOptions.Limit must not be negative, got %d", r.Limit)
	case r.Offset < 0:
		return nil, optionError("RepeatOptions.Offset must not be negative, got %s", r.Offset)
	case !r.EndDate.IsZero() && r.EndDate.Before(now):
		return nil, optionError("RepeatOptions.EndDate %s is in the past", r.EndDate.UTC().Format(time.RFC3339))
	}
	if r.Pattern == "" {
		// BullMQ ignores a time zone with every; a name that is no zone is
		// still a mistake.
		if _, err := schedule.Location(r.TZ); err != nil {
			return nil, optionError("RepeatOptions: %v", err)
		}
		return nil, nil
	}
	s, err := schedule.Parse(r.Pattern, r.TZ)
	if err != nil {
		return nil, optionError("RepeatOptions: %v", err)
	}
	return s, nil
}

// RemoveJobScheduler deletes the job scheduler id and its delayed next run
// (a run already waiting or running is left to finish). It reports whether
// the scheduler existed.
func (q *Queue) RemoveJobScheduler(ctx context.Context, id string) (bool, error) {
	if err := q.check(ctx); err != nil {
		return false, err
	}
	ok, err := scripts.RemoveJobScheduler(ctx, q.writes(), q.k, q.call(), id)
	if err != nil {
		return false, fmt.Errorf("remove job scheduler %q from queue %q: %w", id, q.name, err)
	}
	return ok, nil
}

// GetJobScheduler reads one job scheduler; ErrJobSchedulerNotFound when
// there is none.
func (q *Queue) GetJobScheduler(ctx context.Context, id string) (*JobScheduler, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	var score *redis.FloatCmd
	var hash *redis.MapStringStringCmd
	err := pipelineWithin(ctx, q, true, func(p redis.Pipeliner) error {
		score = p.ZScore(ctx, q.k.Repeat(), id)
		hash = p.HGetAll(ctx, q.k.JobScheduler(id))
		return nil
	})
	if errors.Is(err, redis.Nil) || (err == nil && len(hash.Val()) == 0) {
		return nil, fmt.Errorf("get job scheduler %q from queue %q: %w", id, q.name, ErrJobSchedulerNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get job scheduler %q from queue %q: %w", id, q.name, err)
	}
	return schedulerFromHash(id, int64(score.Val()), hash.Val()), nil
}

// GetJobSchedulers lists job schedulers by next run, a page at a time:
// start and end are inclusive indexes (end -1 = to the last); asc lists the
// soonest first (BullMQ's default is the latest first).
func (q *Queue) GetJobSchedulers(ctx context.Context, start, end int64, asc bool) ([]*JobScheduler, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	zs, err := callWithin(ctx, q, func(ctx context.Context) ([]redis.Z, error) {
		if asc {
			return q.rdb.ZRangeWithScores(ctx, q.k.Repeat(), start, end).Result()
		}
		return q.rdb.ZRevRangeWithScores(ctx, q.k.Repeat(), start, end).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("list job schedulers of queue %q: %w", q.name, err)
	}
	cmds, err := callWithin(ctx, q, func(ctx context.Context) ([]*redis.MapStringStringCmd, error) {
		cmds := make([]*redis.MapStringStringCmd, len(zs))
		_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, z := range zs {
				cmds[i] = p.HGetAll(ctx, q.k.JobScheduler(z.Member.(string)))
			}
			return nil
		})
		return cmds, err
	})
	if err != nil && len(zs) > 0 {
		return nil, fmt.Errorf("list job schedulers of queue %q: %w", q.name, err)
	}
	out := make([]*JobScheduler, 0, len(zs))
	for i, z := range zs {
		if h := cmds[i].Val(); len(h) > 0 { // removed meanwhile, or a legacy entry
			out = append(out, schedulerFromHash(z.Member.(string), int64(z.Score), h))
		}
	}
	return out, nil
}

// GetJobSchedulersCount is the number of job schedulers.
func (q *Queue) GetJobSchedulersCount(ctx context.Context) (int64, error) {
	if err := q.check(ctx); err != nil {
		return 0, err
	}
	n, err := callWithin(ctx, q, func(ctx context.Context) (int64, error) {
		return q.rdb.ZCard(ctx, q.k.Repeat()).Result()
	})
	if err != nil {
		return 0, fmt.Errorf("count job schedulers of queue %q: %w", q.name, err)
	}
	return n, nil
}

func schedulerFromHash(id string, next int64, h map[string]string) *JobScheduler {
	num := func(f string) int64 {
		n, _ := strconv.ParseFloat(h[f], 64)
		return int64(n)
	}
	ms := func(f string) time.Time {
		if n := num(f); n != 0 {
			return time.UnixMilli(n)
		}
		return time.Time{}
	}
	s := &JobScheduler{
		ID: id, Name: h["name"], Next: time.UnixMilli(next), Iterations: int(num("ic")),
		Every: time.Duration(num("every")) * time.Millisecond, Pattern: h["pattern"], TZ: h["tz"],
		Limit: int(num("limit")), StartDate: ms("startDate"), EndDate: ms("endDate"),
		Offset: time.Duration(num("offset")) * time.Millisecond, Data: json.RawMessage("{}"), Opts: jobcodec.PublicOptNames(h["opts"]),
	}
	if d, ok := jobcodec.RawJSON(h["data"]); ok {
		s.Data = d
	}
	return s
}

// advanceScheduler creates the next run of the scheduler whose run rec the
// worker just took, as Node BullMQ's worker does on pickup (before running
// the processor): the next time comes from the run's own repeat options
// (cron) or from the scheduler (every, computed in the script); Limit and
// EndDate end the scheduler.
func (w *Worker) advanceScheduler(ctx context.Context, rec *jobcodec.Record) error {
	nextID, err := w.advance(ctx, rec)
	if err != nil {
		return err
	}
	if nextID != "" {
		w.log.DebugContext(ctx, "job scheduler advanced", slog.String(logkey.JobID, rec.ID), slog.String(logkey.Next, nextID))
	} else if legacyRepeatKey(rec.RepeatJobKey) {
		w.warnLegacyRepeat(ctx, rec)
	}
	return nil
}

// advance is advanceScheduler without its logs: it returns the id of the
// next run it made, "" when it made none (rec is not the scheduler's
// current run, or the scheduler ended or is gone).
func (w *Worker) advance(ctx context.Context, rec *jobcodec.Record) (string, error) {
	var opts map[string]json.RawMessage
	if err := json.Unmarshal([]byte(rec.RawOpts), &opts); err != nil {
		return "", fmt.Errorf("run %s of job scheduler %q: opts: %w", rec.ID, rec.RepeatJobKey, err)
	}
	var repeat map[string]json.RawMessage
	if raw := opts["repeat"]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &repeat); err != nil {
			return "", fmt.Errorf("run %s of job scheduler %q: repeat opts: %w", rec.ID, rec.RepeatJobKey, err)
		}
	}
	if repeat == nil {
		repeat = map[string]json.RawMessage{}
	}
	iteration := jsonNum(repeat["count"]) + 1
	if limit, ok := repeat["limit"]; ok && string(limit) != "null" && iteration > jsonNum(limit) {
		return "", nil
	}
	now := w.q.nowMs()
	endDate := jsonNum(repeat["endDate"])
	if endDate != 0 && now > endDate {
		return "", nil
	}
	from := max(now, jsonNum(opts["prevMillis"]))
	every := jsonNum(repeat["every"])
	var pattern, tz string
	_ = json.Unmarshal(repeat["pattern"], &pattern)
	_ = json.Unmarshal(repeat["tz"], &tz)
	var next int64
	switch {
	case pattern != "" && every != 0:
		return "", fmt.Errorf("run %s of job scheduler %q has both every and pattern: %w", rec.ID, rec.RepeatJobKey, ErrInvalidOption)
	case pattern != "":
		sched, err := schedule.Parse(pattern, tz)
		if err != nil {
			// Final: the same pattern fails the same way on every try.
			return "", fmt.Errorf("run %s of job scheduler %q: %w: %w", rec.ID, rec.RepeatJobKey, ErrInvalidOption, err)
		}
		if start := jsonNum(repeat["startDate"]); start > from {
			from = start
		}
		t, err := sched.Next(time.UnixMilli(from))
		if errors.Is(err, schedule.ErrNoRun) || (err == nil && endDate != 0 && t.UnixMilli() > endDate) {
			return "", nil // no run left before endDate
		}
		if err != nil {
			return "", fmt.Errorf("run %s of job scheduler %q: %w", rec.ID, rec.RepeatJobKey, err)
		}
		next = max(t.UnixMilli(), from)
	case every == 0:
		return "", fmt.Errorf("run %s of job scheduler %q has neither every nor pattern: %w", rec.ID, rec.RepeatJobKey, ErrInvalidOption)
	}
	offset := repeat["offset"]
	delete(repeat, "immediately")
	if every != 0 && jsonNum(offset) != 0 {
		repeat["offset"] = offset
	} else {
		delete(repeat, "offset")
	}
	repeat["count"] = jsonInt(iteration)
	opts["repeat"] = mustJSON(repeat)
	opts["timestamp"] = jsonInt(now)
	// Node's worker passes the run's Job.opts, which its Job constructor
	// gave attempts 0 and a backoff given as a number in object form
	// (Backoffs.normalize): the next run's opts carry both.
	if _, ok := opts["attempts"]; !ok {
		opts["attempts"] = jsonInt(0)
	}
	if b := opts["backoff"]; len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) {
		opts["backoff"] = mustJSON(map[string]any{"type": BackoffFixed, "delay": b})
	}
	opts["repeatJobKey"] = jsonString(rec.RepeatJobKey)
	delete(opts, "jobId")
	delete(opts, "delay")
	if pattern != "" {
		opts["prevMillis"] = jsonInt(next)
	} else {
		delete(opts, "prevMillis")
	}
	a := scripts.AdvanceArgs{
		SchedulerID: rec.RepeatJobKey, ProducerID: rec.ID, NextMs: next, Now: now,
		// BullMQ's addJobScheduler script reads lifo from msgpack'd options.
		Opts: string(mustJSON(opts)), Priority: rec.Opts.Priority, LIFO: rec.Opts.LIFOInLua,
		DedupID: runDedupID(opts["de"]),
	}
	if every != 0 {
		a.Every = strconv.FormatInt(every, 10)
	}
	if n := jsonNum(offset); n != 0 {
		a.Offset = strconv.FormatInt(n, 10)
	}
	// loopCall: the run's wait for it (a deadline) and Close (a cancel)
	// must end it on a client without timeouts too.
	nextID, err := loopCall(w, ctx, func(ctx context.Context) (string, error) {
		return scripts.AdvanceScheduler(ctx, w.q.rdb, w.q.k, a)
	})
	if err != nil {
		return "", fmt.Errorf("create the run after %s of job scheduler %q: %w", rec.ID, rec.RepeatJobKey, err)
	}
	return nextID, nil
}

// warnLegacyRepeat logs that a legacy repeatable job was taken and gets no
// next run, unless its key, though shaped like a legacy one, names a job
// scheduler (whose hash has an iteration count): BullMQ 6.7's workers make
// no next run of a legacy repeatable job either, and say so with an error
// event; without the line the schedule would end unnoticed. Best effort: a
// failed read logs nothing.
func (w *Worker) warnLegacyRepeat(ctx context.Context, rec *jobcodec.Record) {
	scheduler, err := w.q.rdb.HExists(ctx, w.q.k.JobScheduler(rec.RepeatJobKey), "ic").Result()
	if err != nil || scheduler {
		return
	}
	w.log.WarnContext(ctx, "legacy repeatable job taken: no next run is made (BullMQ v6 dropped legacy repeatable jobs); "+
		"recreate it as a job scheduler (Queue.UpsertJobScheduler)",
		slog.String(logkey.JobID, rec.ID), slog.String(logkey.Scheduler, rec.RepeatJobKey))
}

// legacyRepeatKey reports whether key has the shape of a legacy (BullMQ
// v5) repeatable job's key, "name:id:endDate:tz:suffix" with endDate empty
// or digits and suffix a cron pattern (it has a space) or an every in ms
// (digits), as BullMQ 6.7's workers tell it from a job scheduler's id.
func legacyRepeatKey(key string) bool {
	parts := strings.SplitN(key, ":", 5)
	if len(parts) < 5 {
		return false
	}
	endDate, suffix := parts[2], parts[4]
	if suffix == "" || (endDate != "" && !allDigits(endDate)) {
		return false
	}
	return strings.Contains(suffix, " ") || allDigits(suffix)
}

func allDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// runDedupID is the deduplication id a run's stored opts carry in "de"
// (a Node scheduler's template may set one; drover's refuses it): BullMQ
// stores it as the run's "deid" field, as for any add. "" when none.
func runDedupID(de json.RawMessage) string {
	var d struct {
		ID json.RawMessage `json:"id"`
	}
	if len(de) == 0 || json.Unmarshal(de, &d) != nil || len(d.ID) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(d.ID, &s) == nil {
		return s
	}
	if d.ID[0] == '-' || (d.ID[0] >= '0' && d.ID[0] <= '9') {
		return string(d.ID) // a number: Redis stores its text
	}
	return ""
}

// advanceSchedulerRetrying runs advanceScheduler until it succeeds or ctx
// ends (Node retries it the same way): a scheduler whose next run is not
// created stops for good. The run waits for it up to 10 s; when Redis still
// cannot serve then, the worker goes on trying in the background
// (advanceSchedulerLater) and the run starts.
func (w *Worker) advanceSchedulerRetrying(jobCtx context.Context, rec *jobcodec.Record) {
	// Detached from the job: a Close deadline that cancels the job must not
	// cancel the next run's creation (the run would be requeued and, taken
	// again later, realign the schedule past the slots it missed).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(jobCtx), 10*time.Second)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := w.advanceScheduler(ctx, rec)
		if err == nil {
			return
		}
		if !advanceRetryable(err) {
			w.log.ErrorContext(ctx, "job scheduler not advanced: its next run was not created",
				slog.String(logkey.JobID, rec.ID), slog.Any(logkey.Error, err))
			return
		}
		if ctx.Err() != nil || attempt >= 8 {
			w.advanceInBackground(ctx, rec, err)
			return
		}
		w.log.WarnContext(ctx, msgAdvanceFailed, slog.String(logkey.JobID, rec.ID),
			slog.Int(logkey.Attempt, attempt), slog.Any(logkey.Error, err))
		if !sleepCtx(ctx, retryDelay(attempt)) {
			// The run's wait ran out between two tries (slow calls make
			// the tries take longer than their pauses plan for): the
			// worker goes on in the background all the same.
			w.advanceInBackground(ctx, rec, err)
			return
		}
	}
}

// advanceInBackground hands a scheduler's advance that failed with err to
// advanceSchedulerLater, so the run can start.
func (w *Worker) advanceInBackground(ctx context.Context, rec *jobcodec.Record, err error) {
	w.log.WarnContext(ctx, "job scheduler not advanced yet: the run starts, its next run is created once Redis answers",
		slog.String(logkey.JobID, rec.ID), slog.Any(logkey.Error, err))
	w.advances.wg.Add(1) // before Close waits for them (a job is in flight)
	go func() {
		defer w.advances.wg.Done()
		w.advanceSchedulerLater(rec)
	}()
}

// advances are the advances a worker goes on trying after their run
// started (advanceSchedulerLater). They outlive the worker's other
// background work: Close ends them last, after the results are written,
// and tries each at once then (finish), since the run's own completion may
// have been among those results, and a scheduler whose current run
// completed without a next run stops for good.
type advances struct {
	wg   sync.WaitGroup
	ctx  context.Context
	stop context.CancelFunc
	now  chan struct{} // closed by finish: try at once
}

// start readies the advances of a worker starting.
func (a *advances) start() {
	a.ctx, a.stop = context.WithCancel(context.Background())
	a.now = make(chan struct{})
}

// finish has every pending advance try at once, waits for them until ctx
// ends or closeWriteGrace has passed (a Redis still unreachable must not
// hold a Close without a deadline), then ends those left (each logs that
// its scheduler was not advanced).
func (a *advances) finish(ctx context.Context) {
	if a.now == nil {
		return // never started
	}
	close(a.now)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.wg.Wait()
	}()
	grace := time.NewTimer(closeWriteGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-grace.C:
	}
	a.stop()
	<-done
}

// advanceSchedulerLater goes on creating a scheduler's next run after the
// run stopped waiting for it, until Redis takes it or the worker's Close
// ends it (advances.finish). A late advance is safe: the script creates the
// next run only while rec is the scheduler's current run, and moves a late
// schedule to the present.
func (w *Worker) advanceSchedulerLater(rec *jobcodec.Record) {
	ctx, now := w.advances.ctx, w.advances.now
	for attempt := 1; ; attempt++ {
		pause := time.NewTimer(retryDelay(attempt))
		select {
		case <-ctx.Done():
			pause.Stop()
			w.log.Error("job scheduler not advanced: the worker closed before Redis took its next run",
				slog.String(logkey.JobID, rec.ID))
			return
		case <-now:
			now = nil // Close is under way: try now, then at the usual pace
		case <-pause.C:
		}
		pause.Stop()
		err := w.advanceScheduler(ctx, rec)
		switch {
		case err == nil:
			w.log.InfoContext(ctx, "job scheduler advanced after Redis answered again", slog.String(logkey.JobID, rec.ID),
				slog.Int(logkey.Attempt, attempt))
			return
		case ctx.Err() != nil:
			continue // reported at the top
		case !advanceRetryable(err):
			w.log.ErrorContext(ctx, "job scheduler not advanced: its next run was not created",
				slog.String(logkey.JobID, rec.ID), slog.Any(logkey.Error, err))
			return
		}
	}
}

// checkAdvanced makes sure the scheduler of run rec, whose attempt just
// ended, has a next run. It runs the advance once more, in the background:
// when the scheduler moved on (nearly always) that is one script call that
// writes nothing; when rec is still its current run, Redis lost the advance
// made when the run was taken while keeping the take (a restart from a
// snapshot taken between the two, a replica promoted before the second
// write reached it), and without a next run the scheduler would have
// stopped for good, silently: the advance makes it now.
func (w *Worker) checkAdvanced(rec *jobcodec.Record) {
	if w.advances.ctx == nil {
		return // not started
	}
	w.advances.wg.Add(1)
	go func() {
		defer w.advances.wg.Done()
		ctx, cancel := context.WithTimeout(w.advances.ctx, 10*time.Second)
		defer cancel()
		nextID, err := w.advance(ctx, rec)
		switch {
		case err != nil:
			// The advance at pickup reported its own failures.
			w.log.DebugContext(ctx, "job scheduler check after its run failed", slog.String(logkey.JobID, rec.ID),
				slog.Any(logkey.Error, err))
		case nextID != "":
			w.log.WarnContext(ctx, "job scheduler had no next run after its run ended (Redis lost the write that made it); made it now",
				slog.String(logkey.JobID, rec.ID), slog.String(logkey.Next, nextID))
		}
	}()
}

// advanceRetryable reports whether an advance that failed with err may
// succeed later. A Redis answer is final unless it says Redis cannot serve
// for now (out of memory, loading, a replica since a failover, ...):
// giving up then would stop the scheduler for good.
func advanceRetryable(err error) bool {
	var redisErr redis.Error
	return !(errors.As(err, &redisErr) && !outage.Is(err)) && isTransient(err)
}

// isTransient is true for errors worth retrying: not a decoding problem of
// the run itself.
func isTransient(err error) bool {
	var syn *json.SyntaxError
	return !errors.As(err, &syn) && !errors.Is(err, ErrInvalidOption)
}

func jsonNum(raw json.RawMessage) int64 {
	if len(raw) == 0 {
		return 0
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return t.UnixMilli()
			}
			f, _ = strconv.ParseFloat(s, 64)
		}
	}
	return int64(f)
}

func jsonInt(n int64) json.RawMessage { return json.RawMessage(strconv.FormatInt(n, 10)) }

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// mustJSON encodes v without HTML escaping, as Node's JSON.stringify does.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // maps of raw JSON always encode
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// NextRun is the first run of cron pattern in time zone tz ("" = local)
// strictly after t, as BullMQ's job schedulers compute it (cron-parser's
// rules, including its daylight-saving behaviour; see RepeatOptions).
func NextRun(pattern, tz string, t time.Time) (time.Time, error) {
	s, err := schedule.Parse(pattern, tz)
	if err != nil {
		return time.Time{}, optionError("%v", err)
	}
	return s.Next(t)
}
