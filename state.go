package drover

// JobState is where a job is, with BullMQ's names.
type JobState string

const (
	StateWaiting         JobState = "waiting"
	StateActive          JobState = "active"
	StateDelayed         JobState = "delayed"
	StatePrioritized     JobState = "prioritized"
	StateCompleted       JobState = "completed"
	StateFailed          JobState = "failed"
	StateWaitingChildren JobState = "waiting-children"
	// StatePaused counts a legacy (BullMQ v5) paused list; v6 keeps paused
	// jobs in waiting.
	StatePaused  JobState = "paused"
	StateUnknown JobState = "unknown"
)

// DefaultCountStates are the states GetJobCounts reports when given none:
// Node BullMQ's getJobCounts() defaults.
var DefaultCountStates = []JobState{
	StateActive, StateCompleted, StateDelayed, StateFailed, StatePrioritized, StateWaiting,
	StateWaitingChildren,
}

func (s JobState) valid() bool {
	switch s {
	case StateWaiting, StateActive, StateDelayed, StatePrioritized, StateCompleted, StateFailed,
		StateWaitingChildren, StatePaused:
		return true
	}
	return false
}
