package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

// ErrSchedulerNotFound: the queue has no job scheduler with that id. It is
// drover.ErrJobSchedulerNotFound, so errors.Is matches either.
var ErrSchedulerNotFound = drover.ErrJobSchedulerNotFound

// SchedulerInfo is one job scheduler of a queue (BullMQ's upsertJobScheduler
// or drover's Queue.UpsertJobScheduler), as the dashboard and the CLI show
// it.
type SchedulerInfo struct {
	ID string `json:"id"`
	// Name is the name of the jobs it makes (the template's).
	Name string `json:"name"`
	// Every is the interval of an every-scheduler (ms in JSON, 0 for cron).
	Every time.Duration `json:"-"`
	// Pattern is a cron scheduler's pattern, in time zone TZ ("" = the
	// local time zone of the worker computing the next run).
	Pattern string `json:"pattern,omitempty"`
	TZ      string `json:"tz,omitempty"`
	// Next is when its next iteration is due.
	Next Instant `json:"next,omitzero"`
	// Iterations counts the iterations made so far.
	Iterations int `json:"iterations"`
	// Limit is the most iterations it makes (0 = no limit).
	Limit int `json:"limit,omitempty"`
	// EndDate ends it (zero = never).
	EndDate Instant `json:"-"`
}

// MarshalJSON writes Every in ms and EndDate only when set.
func (s SchedulerInfo) MarshalJSON() ([]byte, error) {
	type plain SchedulerInfo
	return json.Marshal(struct {
		plain
		Every   int64   `json:"every"`
		EndDate Instant `json:"endDate,omitzero"`
	}{plain(s), ms(s.Every), s.EndDate})
}

// Schedulers lists queue's job schedulers, soonest next iteration first.
func (i *Inspector) Schedulers(ctx context.Context, queue string) ([]SchedulerInfo, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	return schedulersIn(ctx, q, 0, -1)
}

// SchedulerPage is a page of a queue's job schedulers (SchedulersPage).
type SchedulerPage struct {
	Schedulers []SchedulerInfo `json:"schedulers"`
	// Total counts the queue's job schedulers; Offset is the position of
	// the first on this page (0 = the soonest).
	Total  int `json:"total"`
	Offset int `json:"offset"`
}

// SchedulersPage lists limit of queue's job schedulers from position
// offset, soonest next iteration first, and counts them all: a queue with
// a scheduler per tenant has tens of thousands, and reading them all for
// one screen took seconds each time.
func (i *Inspector) SchedulersPage(ctx context.Context, queue string, offset, limit int) (*SchedulerPage, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if offset < 0 || limit < 1 {
		return nil, fmt.Errorf("%w: schedulers page offset %d, limit %d", drover.ErrInvalidOption, offset, limit)
	}
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	total, err := q.GetJobSchedulersCount(ctx)
	if err != nil {
		return nil, err
	}
	ss, err := schedulersIn(ctx, q, int64(offset), int64(offset+limit-1))
	if err != nil {
		return nil, err
	}
	return &SchedulerPage{Schedulers: ss, Total: int(total), Offset: offset}, nil
}

func schedulersIn(ctx context.Context, q *drover.Queue, start, end int64) ([]SchedulerInfo, error) {
	ss, err := q.GetJobSchedulers(ctx, start, end, true)
	if err != nil {
		return nil, err
	}
	out := make([]SchedulerInfo, 0, len(ss))
	for _, s := range ss {
		out = append(out, SchedulerInfo{
			ID: s.ID, Name: s.Name, Every: s.Every, Pattern: s.Pattern, TZ: s.TZ, Next: Instant{s.Next},
			Iterations: s.Iterations, Limit: s.Limit, EndDate: Instant{s.EndDate},
		})
	}
	return out, nil
}

// RemoveScheduler removes queue's job scheduler id and its delayed next
// iteration (one already waiting or running is left to finish and makes no
// next one), as BullMQ's removeJobScheduler does.
func (i *Inspector) RemoveScheduler(ctx context.Context, queue, id string) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	ok, err := q.RemoveJobScheduler(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: no job scheduler %q in queue %q", ErrSchedulerNotFound, id, queue)
	}
	return nil
}
