package main

// The drover command's operator actions (cancel, retry, promote, clean,
// pause, resume, scheduler upsert and remove) go to the same durable audit
// log as the dashboard's, with the dashboard's action names, so that one
// log answers "who did this" wherever it was done.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/seed40057009/drover/dashboard"
)

// record appends e, with the outcome err gives it, to the dashboards'
// audit log over the connection r opened (nothing when the command never
// connected: it changed nothing). The action is done by then, so a log
// that cannot be written is a warning on warn, not the command's failure.
func (r *redisFlags) record(ctx context.Context, warn io.Writer, e dashboard.AuditEntry, err error) {
	if r.ins == nil {
		return
	}
	e.Time, e.Via, e.User, e.Remote = time.Now(), "cli", cliUser(), cliHost()
	e.Outcome = "ok"
	if err != nil {
		e.Outcome, e.Error = "error", err.Error()
	}
	// Recorded even when ctx ended (the action it ended may be half done).
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if aerr := dashboard.AppendAudit(actx, r.ins.Client(), r.ins.Prefix(), e); aerr != nil {
		fmt.Fprintf(warn, "drover: warning: %s was not recorded in the audit log: %v\n", e.Action, aerr)
	}
}

// cliUser is the account running the command, as the audit log names it.
func cliUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return name
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}

// cliHost is the machine the command ran on (the entry's Remote).
func cliHost() string {
	h, _ := os.Hostname()
	return h
}

// jobsIf is an audit entry's Jobs for an action on one job: 1 when it was
// done.
func jobsIf(err error) int {
	if err != nil {
		return 0
	}
	return 1
}
