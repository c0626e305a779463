package inspect

import (
	"context"
	"errors"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/jobcodec"
)

// Unreadable is a job whose hash does not decode (another tool wrote it, or
// it is damaged). Lists name it apart instead of failing whole: one bad hash
// must not hide a queue's other jobs from the operator.
type Unreadable struct {
	ID string `json:"id"`
	// Error says which field does not decode and why.
	Error string `json:"error"`
}

// jobsByID is Queue.GetJobsByID for readers of many jobs: a job whose hash
// does not decode does not hide the others, it comes back in bad. Only a
// chunk that holds a bad hash is read again, one job at a time.
func jobsByID(ctx context.Context, q *drover.Queue, ids []string) ([]*drover.Job, []Unreadable, error) {
	jobs, err := q.GetJobsByID(ctx, ids)
	var fe *jobcodec.FieldError
	if !errors.As(err, &fe) {
		return jobs, nil, err
	}
	jobs = make([]*drover.Job, 0, len(ids))
	var bad []Unreadable
	for _, id := range ids {
		one, err := q.GetJobsByID(ctx, []string{id})
		switch {
		case errors.As(err, &fe):
			bad = append(bad, Unreadable{ID: id, Error: fe.Error()})
		case err != nil:
			return nil, nil, err
		default:
			jobs = append(jobs, one...)
		}
	}
	return jobs, bad, nil
}
