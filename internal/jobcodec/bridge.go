package jobcodec

// Conversions between the root package's *drover.JobOptions and Opts, for
// drover's own packages that store options outside Redis (the outbox) and so
// need the one codec without the root package exporting its conversions.
// Package drover sets both in its init; jobcodec cannot name its types
// (machinery never imports the root), hence any. Nil until drover is
// linked in, which any caller importing drover guarantees.
var (
	// OptionsToOpts converts a *drover.JobOptions to the stored opts Queue.Add
	// writes. It refuses only what the stored form cannot represent.
	OptionsToOpts func(opts any) (Opts, error)
	// OptsToOptions converts stored opts back to a *drover.JobOptions.
	OptsToOptions func(s *Opts) any
)
