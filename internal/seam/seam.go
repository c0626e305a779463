// Package seam lets the drovertest package and the differential tester
// (internal/interoptest) reach into a Queue and a Worker without making
// their machinery public, and package inspect into a Queue (Promote, for
// the dashboard's audit): the root package fills these variables in at
// init. Nothing else uses them. (internal packages never import the root
// package, so the values are typed any.)
package seam

import (
	"context"

	"github.com/seed40057009/drover/internal/clock"
)

var (
	// SetClock sets the clock of a *drover.Queue or a *drover.Worker.
	SetClock func(queueOrWorker any, c clock.Clock)
	// Wake makes a *drover.Worker's fetcher look for jobs now.
	Wake func(worker any)
	// NoFetchOnFinish makes a *drover.Worker, before its Start, write each
	// result without fetching a next job in the same call (BullMQ's
	// moveToFinished with fetchNext false): the tester's one-job worker
	// step, compared with Node's getNextJob + processJob, which fetches
	// none either.
	NoFetchOnFinish func(worker any)
	// FinishBatch makes a *drover.Worker hold the next results handed in
	// until as many wait as ids lists, and write them in one script call,
	// in the order of ids, which fetches the next jobs for their slots
	// (several, with an RPOP count above 1, when that many wait): the
	// tester's batch finish step, compared with Node finishing the jobs
	// one at a time.
	FinishBatch func(worker any, ids []string)
	// AdvanceScheduler does for the fetched job id (its hash as
	// moveToActive returned it) what a *drover.Worker does first with a
	// job scheduler's run: create the scheduler's next run. The tester's
	// drover stall step calls it, a worker that took the run and died.
	AdvanceScheduler func(ctx context.Context, worker any, id string, hash []any) error
	// CheckStalled runs a *drover.Worker's stalled-job check now, whenever
	// the last one ran.
	CheckStalled func(ctx context.Context, worker any)
	// Promote makes delayed jobs of a *drover.Queue ready now, at most n,
	// those due first (n 0: all), as PromoteEarliest and PromoteJobs do,
	// calling moved with the ids of each chunk it moved; it returns how
	// many it moved.
	Promote func(ctx context.Context, queue any, n int, moved func(ids []string)) (int, error)
	// Drain is a *drover.Queue's Drain that also returns the ids of the
	// first name jobs it deleted, in the order it deleted them.
	Drain func(ctx context.Context, queue any, delayed bool, name int) (int, []string, error)
)
