package drover

import "context"

// GetJobsByID reads the jobs with the given ids in one round trip, in the
// order given. Ids with no job (never added, or removed since they were
// listed) are skipped, so the result may be shorter than ids. So are ids
// that name one of the queue's own keys ("wait", "meta", ...; see
// keys.CheckStoredJobID): no job has one, and reading that key as a job
// hash failed the whole call with Redis's WRONGTYPE or returned the key as
// a job. Use it with GetJobIDs to page through a state and still know each
// job's position.
func (q *Queue) GetJobsByID(ctx context.Context, ids []string) ([]*Job, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	for i, id := range ids {
		if storedIDError(id) != nil {
			// Copy once, on the first id to leave out: the caller's slice
			// stays as it was.
			kept := append(make([]string, 0, len(ids)), ids[:i]...)
			for _, id := range ids[i+1:] {
				if storedIDError(id) == nil {
					kept = append(kept, id)
				}
			}
			ids = kept
			break
		}
	}
	return q.getJobsByID(ctx, ids)
}
