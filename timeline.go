package drover

import (
	"encoding/json"
	"time"
)

// The attempt timeline is stored in the job hash field "drover.attempts"
// (jobcodec.TimelineField) as a JSON array of timelineRecord. The record is
// the storage format; Attempt is the public view. Renaming or retyping a
// field of Attempt must not change timelineRecord: stored timelines outlive
// the code that wrote them.
//
// Versions:
//   - 1 (no "v"): drover before the Outcome type; outcome is "completed",
//     "failed" (with "unrecoverable":true for an Unrecoverable error),
//     "retry", "delayed" (a backoff when error is set, else the processor's
//     Delay) or "requeued".
//   - 2: "v":2; outcome is the stored code of the outcome table (outcome.go).
//
// Both keep v1's field names and units (backoff in nanoseconds), so a v1
// reader still reads a v2 record's times.
//
// A record with "fresh" is no attempt but the boundary a retry with fresh
// attempts left (Attempt.Fresh): written by the retry's script
// (internal/scripts/lua/include/fresh.lua) with outcome "=", n the job's
// attempts started before it, and "fresh" the counters it reset and its
// time in ms ("at"). Readers from before it read an attempt of unknown
// outcome.
const timelineVersion = 2

// freshStored is the stored outcome of a fresh-attempts boundary.
const freshStored = "="

// TimelineLimit is how many attempts Job.Timeline keeps per job: the
// newest (a fresh-attempts boundary counts as one). A record that holds fewer and starts after attempt 1 lost none:
// the attempts before it were not run by a drover worker.
const TimelineLimit = 25

type timelineRecord struct {
	V       int           `json:"v,omitempty"`
	N       int           `json:"n"`
	Start   time.Time     `json:"start"`
	End     time.Time     `json:"end"`
	Outcome string        `json:"outcome"`
	Error   string        `json:"error,omitempty"`
	Worker  string        `json:"worker,omitempty"`
	Backoff time.Duration `json:"backoff,omitempty"`
	NextRun time.Time     `json:"next,omitzero"`
	// Unrecoverable (version 1 only) marked a "failed" attempt that ended
	// through Unrecoverable.
	Unrecoverable bool `json:"unrecoverable,omitempty"`
	// Fresh marks a fresh-attempts boundary.
	Fresh *freshRecord `json:"fresh,omitempty"`
}

// freshRecord is the stored form of FreshAttempts.
type freshRecord struct {
	At           int64  `json:"at"`
	From         string `json:"from"`
	Made         int    `json:"made"`
	Started      int    `json:"started"`
	Stalled      int    `json:"stalled"`
	Traces       int    `json:"traces"`
	ResetMade    bool   `json:"resetMade,omitempty"`
	ResetStarted bool   `json:"resetStarted,omitempty"`
}

// encodeTimeline renders attempts as stored (version 2).
func encodeTimeline(attempts []Attempt) string {
	recs := make([]timelineRecord, len(attempts))
	for i, a := range attempts {
		recs[i] = timelineRecord{
			V: timelineVersion, N: a.N, Start: a.Start, End: a.End, Outcome: a.Outcome.info().stored,
			Error: a.Error, Worker: a.Worker, Backoff: a.Backoff, NextRun: a.NextRun,
		}
		if f := a.Fresh; f != nil {
			recs[i].Outcome, recs[i].End = freshStored, time.Time{}
			recs[i].Fresh = &freshRecord{At: a.End.UnixMilli(), From: string(f.From), Made: f.Made, Started: f.Started,
				Stalled: f.Stalled, Traces: f.Traces, ResetMade: f.ResetMade, ResetStarted: f.ResetStarted}
		}
	}
	b, _ := json.Marshal(recs) // plain fields: cannot fail
	return string(b)
}

// DecodeTimeline reads a stored attempt timeline, the job hash field
// "drover.attempts", as Job.Timeline holds it: for tools that read a job's
// hash field by field, without its data (package inspect's lists). A
// damaged one decodes to nil.
func DecodeTimeline(stored string) []Attempt { return decodeTimeline(stored) }

// decodeTimeline reads a stored timeline of any version. A damaged one is
// only lost history: it decodes to nil.
func decodeTimeline(s string) []Attempt {
	var recs []timelineRecord
	if json.Unmarshal([]byte(s), &recs) != nil {
		return nil
	}
	out := make([]Attempt, len(recs))
	for i, r := range recs {
		out[i] = Attempt{
			N: r.N, Start: r.Start, End: r.End, Outcome: r.outcome(),
			Error: r.Error, Worker: r.Worker, Backoff: r.Backoff, NextRun: r.NextRun,
		}
		if f := r.Fresh; f != nil {
			out[i].Outcome, out[i].End = OutcomeUnknown, time.UnixMilli(f.At)
			out[i].Fresh = &FreshAttempts{From: JobState(f.From), Made: f.Made, Started: f.Started,
				Stalled: f.Stalled, Traces: f.Traces, ResetMade: f.ResetMade, ResetStarted: f.ResetStarted}
		}
	}
	return out
}

func (r *timelineRecord) outcome() Outcome {
	if r.V >= 2 {
		for o, info := range outcomes {
			if info.stored == r.Outcome {
				return Outcome(o)
			}
		}
		return OutcomeUnknown
	}
	switch r.Outcome { // version 1
	case "completed":
		return OutcomeCompleted
	case "failed":
		if r.Unrecoverable {
			return OutcomeFailedUnrecoverable
		}
		return OutcomeFailed
	case "retry":
		return OutcomeRetried
	case "delayed":
		if r.Error != "" {
			return OutcomeRetryDelayed
		}
		return OutcomeDelayed
	case "requeued":
		return OutcomeRequeued
	}
	return OutcomeUnknown
}
