package drover

import "context"

// GetJobsByID reads the jobs with the given ids in one round trip, in the
// order given. Ids with no job (never added, or removed since they were
// listed) are skipped, so the result may be shorter than ids. Use it with
// GetJobIDs to page through a state and still know each job's position.
func (q *Queue) GetJobsByID(ctx context.Context, ids []string) ([]*Job, error) {
	if err := q.check(); err != nil {
		return nil, err
	}
	return q.getJobsByID(ctx, ids)
}
