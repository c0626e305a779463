package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
)

// ActiveJob is an active job with its lock.
type ActiveJob struct {
	JobSummary
	Lock Lock `json:"lock"`
	// Candidate: the last stalled check marked the job; the next check
	// recovers it unless its lock is held then.
	Candidate bool `json:"candidate"`
}

// StalledReport is the stalled view of a queue.
type StalledReport struct {
	Queue string `json:"queue"`
	// Stalled lists jobs that stalled at least once (StalledCount > 0), in
	// any state, newest first per state.
	Stalled []JobSummary `json:"stalled"`
	// Active lists every active job with its lock TTL. A job whose lock is
	// gone is stalling: the next stalled check recovers it.
	Active []ActiveJob `json:"active"`
	// Scanned counts the jobs looked at; Truncated says a state held more
	// than Options.ScanLimit jobs and only the newest were looked at.
	Scanned   int  `json:"scanned"`
	Truncated bool `json:"truncated"`
}

// stalledStates are the states the stalled view looks through.
var stalledStates = []drover.JobState{
	drover.StateActive, drover.StateWaiting, drover.StatePrioritized, drover.StateDelayed,
	drover.StateFailed, drover.StateCompleted, drover.StatePaused,
}

// Stalled reads the stalled view of queue: jobs with a stall count and the
// locks of active jobs.
func (i *Inspector) Stalled(ctx context.Context, queue string) (*StalledReport, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	k := i.keys(queue)
	rep := &StalledReport{Queue: queue, Stalled: []JobSummary{}, Active: []ActiveJob{}}
	for _, state := range stalledStates {
		ids, err := q.GetJobIDs(ctx, []drover.JobState{state}, 0, int64(i.opts.ScanLimit-1), false)
		if err != nil {
			return nil, err
		}
		rep.Scanned += len(ids)
		if len(ids) == i.opts.ScanLimit && !rep.Truncated {
			if rep.Truncated, err = holdsMore(ctx, q, state, len(ids), false); err != nil {
				return nil, err
			}
		}
		if len(ids) == 0 {
			continue
		}
		stc := make([]*redis.StringCmd, len(ids))
		_, err = i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for n, id := range ids {
				stc[n] = p.HGet(ctx, k.Job(id), "stc")
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read stall counts in queue %q: %w", queue, err)
		}
		var stalled []string
		for n, c := range stc {
			if v, err := c.Int(); err == nil && v > 0 {
				stalled = append(stalled, ids[n])
			}
		}
		if len(stalled) > 0 {
			jobs, err := i.readJobs(ctx, q, state, stalled, false)
			if err != nil {
				return nil, err
			}
			for _, id := range stalled {
				if j := jobs[id]; j != nil && j.job != nil {
					rep.Stalled = append(rep.Stalled, summarize(state, j.job, j.nextRun))
				}
			}
		}
		if state == drover.StateActive {
			if err := i.activeLocks(ctx, q, ids, rep); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

func (i *Inspector) activeLocks(ctx context.Context, q *drover.Queue, ids []string, rep *StalledReport) error {
	read, err := i.readJobs(ctx, q, drover.StateActive, ids, false)
	if err != nil {
		return err
	}
	jobs := make([]*drover.Job, 0, len(ids))
	for _, id := range ids {
		if r := read[id]; r != nil && r.job != nil {
			jobs = append(jobs, r.job)
		}
	}
	locks, err := i.locks(ctx, q.Name(), ids)
	if err != nil {
		return err
	}
	k := i.keys(q.Name())
	marked := make([]*redis.BoolCmd, len(jobs))
	_, err = i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, j := range jobs {
			marked[n] = p.SIsMember(ctx, k.Stalled(), j.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read stalled candidates in queue %q: %w", q.Name(), err)
	}
	for n, j := range jobs {
		a := ActiveJob{JobSummary: summarize(drover.StateActive, j, time.Time{}), Candidate: marked[n].Val()}
		if l := locks[j.ID]; l != nil {
			a.Lock = *l
		}
		rep.Active = append(rep.Active, a)
	}
	return nil
}
