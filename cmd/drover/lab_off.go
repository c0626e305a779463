//go:build !lab

package main

import (
	"context"
)

// The failure lab needs database drivers (pure-Go SQLite, pgx) that take
// most of drover's compile time, and nothing else uses them: the default
// build leaves the lab out, so the first `go run ./cmd/drover demo` is
// quick. `-tags lab` builds it in (lab.go).
func init() {
	commands["lab"] = commandInfo{
		summary: "run the failure lab (in builds with -tags lab: go run -tags lab ./cmd/drover lab)",
		make:    func(m *Main) command { return labOff{} },
	}
}

type labOff struct{}

func (labOff) Run(context.Context, []string) error {
	return usagef("lab: this drover was built without the failure lab, whose database drivers (SQLite, PostgreSQL) " +
		"take most of the compile time; run `go run -tags lab ./cmd/drover lab`, or install it with " +
		"`go install -tags lab github.com/seed40057009/drover/cmd/drover@latest`")
}
