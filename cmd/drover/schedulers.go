package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/schedule"
)

func init() {
	commands["schedulers"] = commandInfo{
		summary: "list a queue's job schedulers with their next runs",
		make:    func(m *Main) command { return &schedulersCmd{out: m.Stdout} },
	}
	commands["scheduler"] = commandInfo{
		summary: "create, replace or remove a job scheduler (upsert|remove)",
		make:    func(m *Main) command { return &schedulerCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// schedulersCmd is `drover schedulers <queue>`.
type schedulersCmd struct{ out io.Writer }

func (c *schedulersCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("schedulers", c.out, "Usage: drover schedulers <queue> [--json]\n\n"+
		"Lists the queue's job schedulers (Node's and drover's), soonest next run first.")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("schedulers needs one <queue>")
	}
	q, closeRedis, err := fs.redis.existingQueue(ctx, pos[0])
	if err != nil {
		return err
	}
	defer closeRedis()
	list, err := q.GetJobSchedulers(ctx, 0, -1, true)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]map[string]any, 0, len(list))
		for _, s := range list {
			// Names and units as inspect.SchedulerInfo's (the dashboard's):
			// every instant epoch ms, every duration ms.
			m := map[string]any{"id": s.ID, "name": s.Name, "next": s.Next.UnixMilli(),
				"iterations": s.Iterations, "data": s.Data}
			if s.Every > 0 {
				m["every"] = s.Every.Milliseconds()
			}
			if s.Pattern != "" {
				m["pattern"], m["tz"] = s.Pattern, s.TZ
			}
			if s.Limit > 0 {
				m["limit"] = s.Limit
			}
			if !s.EndDate.IsZero() {
				m["endDate"] = s.EndDate.UnixMilli()
			}
			if s.Opts != "" {
				m["opts"] = json.RawMessage(s.Opts)
			}
			out = append(out, m)
		}
		return writeJSON(c.out, map[string]any{"queue": pos[0], "schedulers": out})
	}
	if len(list) == 0 {
		// A bare header said nothing; the other listings say so.
		_, err := fmt.Fprintf(c.out, "no job schedulers in %s\n", pos[0])
		return err
	}
	t := newTable(c.out, "ID", "NAME", "SCHEDULE", "NEXT RUN", "RUNS")
	for _, s := range list {
		sched := "every " + s.Every.String()
		if s.Pattern != "" {
			sched = s.Pattern
			if s.TZ != "" {
				sched += " (" + s.TZ + ")"
			}
		}
		runs := fmt.Sprint(s.Iterations)
		if s.Limit > 0 {
			runs += fmt.Sprintf("/%d", s.Limit)
		}
		// Local time and how far off, as drover jobs and job show a next
		// run: it was UTC in RFC 3339 alone, and a run long overdue (no
		// worker on the queue) looked like any other.
		next := inspect.InstantOf(s.Next)
		t.row(s.ID, s.Name, sched, when(next)+" ("+until(next)+")", runs)
	}
	return t.flush()
}

// schedulerCmd is `drover scheduler upsert|remove`, audited as
// upsert-scheduler and remove-scheduler.
type schedulerCmd struct{ out, errOut io.Writer }

func (c *schedulerCmd) Run(ctx context.Context, args []string) (err error) {
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		// Asked for help before naming upsert or remove: both usages.
		fmt.Fprintln(c.out, "Usage: drover scheduler upsert <queue> <id> (--every d | --pattern p [--tz z]) [flags]\n"+
			"       drover scheduler remove <queue> <id>\n\n"+
			"Creates or replaces a job scheduler, or removes one. `drover scheduler upsert -h` lists upsert's flags.")
		return flag.ErrHelp
	}
	if len(args) == 0 || (args[0] != "upsert" && args[0] != "remove") {
		return usagef("scheduler needs upsert or remove: drover scheduler upsert <queue> <id> (--every d | --pattern p [--tz z]) ...; drover scheduler remove <queue> <id>")
	}
	sub := args[0]
	fs := newQueueFlags("scheduler "+sub, c.out, fmt.Sprintf("Usage: drover scheduler %s <queue> <id> [flags]\n", sub))
	asJSON := fs.jsonFlag()
	every := fs.duration("every", 0, "run at this interval")
	pattern := fs.String("pattern", "", "cron pattern (5 fields, or 6 with seconds first)")
	tz := fs.String("tz", "", "IANA time zone of the pattern (default UTC)")
	limit := fs.Int("limit", 0, "stop after this many runs (0 = no limit)")
	name := fs.String("name", "", "name of each run (default: the scheduler id)")
	data := fs.String("data", "{}", "JSON data of each run")
	attempts := fs.Int("attempts", 0, "attempts of each run")
	immediately := fs.Bool("immediately", false, "first cron run now")
	pos, err := fs.parse(args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("scheduler %s needs <queue> <id>", sub)
	}
	if sub == "remove" {
		// upsert's flags were taken by remove and ignored.
		var given []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "every", "pattern", "tz", "limit", "name", "data", "attempts", "immediately":
				given = append(given, "--"+f.Name)
			}
		})
		if len(given) > 0 {
			return usagef("scheduler remove takes none of upsert's flags, got %s", strings.Join(given, ", "))
		}
	}
	if sub == "upsert" {
		// Checked before Redis is opened: a usage error writes nothing,
		// not even an audit entry.
		if !json.Valid([]byte(*data)) {
			return usagef("--data must be JSON, got %q", *data)
		}
		everySet := false
		fs.Visit(func(f *flag.Flag) { everySet = everySet || f.Name == "every" })
		if everySet == (*pattern != "") {
			return usagef("scheduler upsert needs exactly one of --every and --pattern")
		}
		switch {
		case everySet && *every < time.Millisecond:
			return usagef("--every must be at least 1ms, got %s", *every)
		case everySet && *tz != "":
			// An interval has no wall clock: a zone would be stored and ignored.
			return usagef("--tz applies to --pattern only; --every %s runs at fixed intervals in any zone", *every)
		case *limit < 0:
			return usagef("--limit must not be negative (0 = no limit), got %d", *limit)
		case *attempts < 0:
			return usagef("--attempts must not be negative, got %d", *attempts)
		}
		if *pattern != "" {
			// A pattern or zone the scheduler would refuse is a typo in
			// the command line: said as one, before Redis is opened. It
			// reached Redis, exit 1, and left a refused audit entry.
			if _, err := schedule.Location(*tz); err != nil {
				return usagef("--tz: %v", err)
			}
			if _, err := schedule.Parse(*pattern, cmp.Or(*tz, "UTC")); err != nil {
				return usagef("--pattern: %v", err)
			}
		}
	}
	open := fs.redis.queue // upsert creates the queue
	if sub == "remove" {
		open = fs.redis.existingQueue
	}
	q, closeRedis, err := open(ctx, pos[0])
	if err != nil {
		return err
	}
	defer closeRedis()
	e := dashboard.AuditEntry{Action: sub + "-scheduler", Queue: pos[0], Detail: "scheduler=" + pos[1]}
	defer func() { fs.redis.record(ctx, c.errOut, e, err) }()
	if sub == "remove" {
		ok, err := q.RemoveJobScheduler(ctx, pos[1])
		if err != nil {
			return err
		}
		if !ok {
			e.Detail += " (none)"
		}
		if *asJSON {
			return writeJSON(c.out, map[string]any{"queue": pos[0], "id": pos[1], "removed": ok})
		}
		if !ok {
			return fmt.Errorf("queue %q has no job scheduler %q", pos[0], pos[1])
		}
		fmt.Fprintf(c.out, "%s: job scheduler %s removed\n", pos[0], pos[1])
		return nil
	}

	if *pattern != "" && *tz == "" {
		// The default the flag names: stored, so that every worker, Node's
		// included, computes the runs in UTC. Without a zone each worker
		// would use its own machine's (BullMQ's rule for a pattern without
		// tz), and the first run this process's.
		*tz = "UTC"
	}
	tmpl := &drover.JobTemplate{Name: *name, Data: json.RawMessage(*data)}
	if *attempts > 0 {
		tmpl.Opts = &drover.JobOptions{Attempts: *attempts}
	}
	e.Detail += fmt.Sprintf(" every=%s pattern=%q tz=%q limit=%d", *every, *pattern, *tz, *limit)
	job, err := q.UpsertJobScheduler(ctx, pos[1], drover.RepeatOptions{
		Every: *every, Pattern: *pattern, TZ: *tz, Limit: *limit, Immediately: *immediately,
	}, tmpl)
	if err != nil {
		return err
	}
	if job == nil {
		// UpsertJobScheduler stores nothing for a scheduler with no run
		// left; reading it back said "job scheduler not found".
		return fmt.Errorf("job scheduler %q of queue %q would never run (its pattern has no next time, or --limit is reached): nothing stored", pos[1], pos[0])
	}
	s, err := q.GetJobScheduler(ctx, pos[1])
	if err != nil {
		return err
	}
	runID := ""
	if job != nil {
		runID = job.ID
	}
	if *asJSON {
		// next in epoch ms, as every instant of --json (drover schedulers'
		// next among them); it was an RFC 3339 string here alone.
		return writeJSON(c.out, map[string]any{"queue": pos[0], "id": pos[1], "next": s.Next.UnixMilli(), "run": runID})
	}
	next := inspect.InstantOf(s.Next)
	fmt.Fprintf(c.out, "%s: job scheduler %s, next run %s (%s), job %s\n", pos[0], pos[1], when(next), until(next), runID)
	return nil
}
