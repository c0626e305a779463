package inspect

import (
	"context"
	"fmt"

	"github.com/seed40057009/drover"
)

// BudgetReport lists live jobs that used most of their attempt budget.
type BudgetReport struct {
	Queue string `json:"queue"`
	// Threshold is Options.BudgetThreshold: listed jobs have
	// Budget.Used > Threshold and at least one attempt left.
	Threshold float64      `json:"threshold"`
	Jobs      []JobSummary `json:"jobs"`
	// Scanned counts the jobs looked at; Truncated says a state held more
	// than Options.ScanLimit jobs and only the newest were looked at.
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
	for _, state := range liveStates {
		for pos := 0; pos < i.opts.ScanLimit; pos += chunk {
			n := min(chunk, i.opts.ScanLimit-pos)
			ids, err := q.GetJobIDs(ctx, []drover.JobState{state}, int64(pos), int64(pos+n-1), false)
			if err != nil {
				return nil, err
			}
			rep.Scanned += len(ids)
			if len(ids) == 0 {
				break
			}
			jobs, err := i.readJobs(ctx, q, state, ids)
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				j := jobs[id]
				if j == nil {
					continue
				}
				if b := BudgetOf(j.job); b.Used > rep.Threshold && b.Left > 0 {
					rep.Jobs = append(rep.Jobs, summarize(state, j.job, j.nextRun))
				}
			}
			if len(ids) < n {
				break
			}
			if pos+n >= i.opts.ScanLimit {
				rep.Truncated = true
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
