package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
)

// idOutcome is one id's outcome of a command given job ids.
type idOutcome struct {
	ID    string `json:"id"`
	Error string `json:"error,omitempty"`
}

// eachID runs act on every id of queue and audits each call as action.
// Every id is tried and each one's outcome kept: an id refused (not found,
// held by a worker, in another state) must not hide the jobs done before
// it, nor leave the ids after it untried. Only a queue that does not exist
// ends it, as it would every other id. It returns the outcomes and how
// many ids act did.
func eachID(ctx context.Context, r *redisFlags, warn io.Writer, action, queue string, ids []string, act func(id string) error) ([]idOutcome, int, error) {
	results := make([]idOutcome, 0, len(ids))
	done := 0
	for _, id := range ids {
		err := act(id)
		r.record(ctx, warn, dashboard.AuditEntry{Action: action, Queue: queue, JobID: id, Jobs: jobsIf(err)}, err)
		if errors.Is(err, inspect.ErrQueueNotFound) {
			return nil, 0, err
		}
		o := idOutcome{ID: id}
		if err != nil {
			o.Error = err.Error()
		} else {
			done++
		}
		results = append(results, o)
	}
	return results, done, nil
}

// printOutcomes writes a line per id: "job ID: <verb>" on out, or, on
// errOut, "drover: job ID: not <verb>: <error>": why an id was not done is
// an error, and stays in sight when stdout goes to a file or a pipe.
func printOutcomes(out, errOut io.Writer, results []idOutcome, verb string) {
	for _, o := range results {
		if o.Error != "" {
			fmt.Fprintf(errOut, "drover: job %s: not %s: %s\n", o.ID, verb, tidyMessage(o.Error))
		} else {
			fmt.Fprintf(out, "job %s: %s\n", o.ID, verb)
		}
	}
}
