package inspect

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/jobcodec"
)

// BudgetReport lists live jobs that used most of their attempt budget.
type BudgetReport struct {
	Queue string `json:"queue"`
	// Threshold is Options.BudgetThreshold: listed jobs have
	// Budget.Used > Threshold and at least one attempt left.
	Threshold float64      `json:"threshold"`
	Jobs      []JobSummary `json:"jobs"`
	// Scanned counts the jobs looked at; Truncated says a state held more
	// than Options.BudgetScanLimit jobs and only the newest were looked at.
	Scanned   int  `json:"scanned"`
	Truncated bool `json:"truncated"`
	// Alert is set when Jobs is not empty.
	Alert *Alert `json:"alert,omitempty"`
}

// liveStates hold jobs that will run again.
var liveStates = []drover.JobState{
	drover.StateDelayed, drover.StateWaiting, drover.StatePrioritized, drover.StateActive, drover.StatePaused,
}

// NearExhausted lists queue's jobs that will run again and have used more
// than Options.BudgetThreshold of their attempts: the next failures fail
// them for good.
func (i *Inspector) NearExhausted(ctx context.Context, queue string) (*BudgetReport, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	rep := &BudgetReport{Queue: queue, Threshold: i.opts.BudgetThreshold, Jobs: []JobSummary{}}
	const chunk = 500
	limit := i.opts.BudgetScanLimit
	for _, state := range liveStates {
		for pos := 0; pos < limit; pos += chunk {
			n := min(chunk, limit-pos)
			ids, err := q.GetJobIDs(ctx, []drover.JobState{state}, int64(pos), int64(pos+n-1), false)
			if err != nil {
				return nil, err
			}
			rep.Scanned += len(ids)
			if len(ids) == 0 {
				break
			}
			// Two reads: the attempt counters and budget of every job (a
			// few bytes each), then the summaries of those that match.
			near, err := i.nearExhausted(ctx, q.Name(), ids, rep.Threshold)
			if err != nil {
				return nil, err
			}
			if len(near) > 0 {
				jobs, err := i.readJobs(ctx, q, state, near, false)
				if err != nil {
					return nil, err
				}
				for _, id := range near {
					j := jobs[id]
					if j == nil || j.job == nil {
						continue
					}
					if b := BudgetOf(j.job); b.Used > rep.Threshold && b.Left > 0 {
						rep.Jobs = append(rep.Jobs, summarize(state, j.job, j.nextRun))
					}
				}
			}
			if len(ids) < n {
				break
			}
			if pos+n >= limit && !rep.Truncated {
				if rep.Truncated, err = holdsMore(ctx, q, state, limit, false); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(rep.Jobs) > 0 {
		rep.Alert = &Alert{
			Kind: AlertBudget, Queue: queue, Value: float64(len(rep.Jobs)), Threshold: rep.Threshold,
			Message: fmt.Sprintf("%d jobs have used more than %.0f%% of their attempts", len(rep.Jobs), rep.Threshold*100),
		}
	}
	return rep, nil
}

// nearExhausted returns the ids whose attempts made and budget (only these
// fields are read) put them above threshold with attempts left.
func (i *Inspector) nearExhausted(ctx context.Context, queue string, ids []string, threshold float64) ([]string, error) {
	k := i.keys(queue)
	cmds := make([]*redis.SliceCmd, len(ids))
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, id := range ids {
			cmds[n] = p.HMGet(ctx, k.Job(id), "atm", "attemptsMade", "opts")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read attempt budgets in queue %q: %w", queue, err)
	}
	var out []string
	for n, c := range cmds {
		vals := c.Val()
		m := make(map[string]string, 3)
		for f, name := range []string{"atm", "attemptsMade", "opts"} {
			if f < len(vals) {
				if s, ok := vals[f].(string); ok {
					m[name] = s
				}
			}
		}
		rec, ok, err := jobcodec.DecodeMap(ids[n], m)
		if err != nil || !ok {
			continue // gone, or unreadable: the summary read reports it
		}
		job := drover.Job{AttemptsMade: int(rec.AttemptsMade), Opts: drover.JobOptions{Attempts: int(rec.Opts.Attempts)}}
		if b := BudgetOf(&job); b.Used > threshold && b.Left > 0 {
			out = append(out, ids[n])
		}
	}
	return out, nil
}
