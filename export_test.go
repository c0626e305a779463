package drover

import (
	"io"
	"time"

	"github.com/seed40057009/drover/internal/clock"
)

// SetQueueClock replaces a queue's clock (tests only).
func SetQueueClock(q *Queue, c clock.Clock) { q.clock = c }

// SetWorkerClock replaces a worker's clock (tests only).
func SetWorkerClock(w *Worker, c clock.Clock) { w.q.clock = c }

// SetWorkerRand replaces the worker's jitter source (tests only).
func SetWorkerRand(w *Worker, r func() float64) { w.rand = r }

// SetQueueBaseClock replaces the clock a queue corrects by its measured
// offset to Redis TIME (tests only; call before the first call).
func SetQueueBaseClock(q *Queue, c clock.Clock) {
	corrected := clock.NewCorrected(c)
	q.clock = corrected
	if q.clocker != nil {
		q.clocker.clock = corrected
	}
}

// SetWorkerBaseClock replaces the clock a worker corrects by its measured
// offset to Redis TIME (tests only; call before Start).
func SetWorkerBaseClock(w *Worker, c clock.Clock) {
	corrected := clock.NewCorrected(c)
	w.q.clock = corrected
	if w.clocker != nil {
		w.clocker.clock = corrected
	}
}

// SetDefaultLogOutput makes Queues and Workers created without a Logger
// write to w until the returned func restores stderr (tests only; not
// safe while other tests create workers).
func SetDefaultLogOutput(w io.Writer) (restore func()) {
	old := defaultLogOutput
	defaultLogOutput = w
	return func() { defaultLogOutput = old }
}

// SetCloseBegunHook makes Close call f once the worker is marked closing,
// before it stops the fetcher (tests only; set before Start).
func SetCloseBegunHook(w *Worker, f func()) { w.closeBegun = f }

// SetBeforeFinishWakeHook makes a result write call f after it decided to
// wake the fetcher for a new delayed job and before it does (tests only;
// set before Start).
func SetBeforeFinishWakeHook(w *Worker, f func()) { w.beforeFinishWake = f }

// SetWorkerRunnerKeep sets how long a worker keeps a job goroutine with
// nothing to run (tests only; call before Start).
func SetWorkerRunnerKeep(w *Worker, d time.Duration) { w.runners.keepFor = d }

// KeptRunners is how many job goroutines the worker keeps for a next job
// (tests only).
func KeptRunners(w *Worker) int {
	w.runners.mu.Lock()
	defer w.runners.mu.Unlock()
	return len(w.runners.idle)
}

// SetWaitHook makes WaitUntilFinished on q call f at its stages: "position"
// once it took its events stream position and registered, "checked" after
// each look at the job that found it unfinished, and "read" in the shared
// reader before each read (tests only; set before the call).
func SetWaitHook(q *Queue, f func(stage string)) { q.onWait = f }

// CloseWriteGrace is closeWriteGrace (tests only).
const CloseWriteGrace = closeWriteGrace
