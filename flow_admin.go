package drover

import (
	"context"

	"github.com/seed40057009/drover/internal/scripts"
)

// RemoveChildDependency detaches the job, a flow child, from its parent
// (BullMQ's job.removeChildDependency): the parent stops waiting for it,
// and the job forgets its parent (its Parent is nil when read again) and
// runs on as an ordinary job. When it was the last child the parent waited
// for, the parent moves from waiting-children to its queue's wait list with
// a waiting event, as BullMQ does, ignoring the parent's priority and delay
// as BullMQ does when a child is removed.
//
// It reports false, changing nothing, when the job is no longer one of
// the parent's pending dependencies: it completed (its value is recorded
// in the parent), failed under a failure policy, or was detached before.
// A job that names no parent, or whose parent is gone, is refused with
// ErrParentNotFound (as BullMQ refuses it), a missing job with
// ErrJobNotFound.
func (j *Job) RemoveChildDependency(ctx context.Context) (bool, error) {
	if j == nil {
		return false, errNilJob
	}
	if err := j.storedIDErr("remove child dependency of"); err != nil {
		return false, err
	}
	if err := j.queue.check(ctx); err != nil {
		return false, err
	}
	ok, err := scripts.RemoveChildDependency(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID)
	if err != nil {
		return false, j.err("remove child dependency of", err)
	}
	if ok {
		j.Parent = nil
	}
	return ok, nil
}

// RemoveUnprocessedChildren deletes the flow children the job still waits
// for, and the children those wait for, each in its own queue, in one
// script (BullMQ's job.removeUnprocessedChildren). A child a worker is
// processing, or one that failed, is kept with its own children. Each
// deleted job gets a removed event and is detached from its parent first,
// so a parent left with no pending child moves from waiting-children to
// wait (with a waiting event) and will run: this job itself, when every
// child it waited for was deleted. Children already completed, and the
// values they left, are not touched.
//
// It returns how many jobs it deleted. A missing job is refused with
// ErrJobNotFound (BullMQ's call returns nothing either way).
func (j *Job) RemoveUnprocessedChildren(ctx context.Context) (int, error) {
	if j == nil {
		return 0, errNilJob
	}
	if err := j.storedIDErr("remove unprocessed children of"); err != nil {
		return 0, err
	}
	if err := j.queue.check(ctx); err != nil {
		return 0, err
	}
	n, err := scripts.RemoveUnprocessedChildren(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID)
	if err != nil {
		return 0, j.err("remove unprocessed children of", err)
	}
	return int(n), nil
}
