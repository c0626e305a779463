package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/keys"
)

func init() {
	commands["watch"] = commandInfo{
		summary: "print a queue's events as they happen (human lines or --json)",
		make:    func(m *Main) command { return &watchCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

type watchCmd struct {
	out io.Writer
	// errOut gets a line when Redis stops answering (watch keeps reading
	// once it answers again) and when it answers again.
	errOut io.Writer
}

func (c *watchCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("watch", c.out, "Usage: drover watch <queue> [--json] [--from ID]\n\nPrints the queue's events until interrupted.")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	from := fs.String("from", "", `start after this event id ("0" = the whole stream; default: new events only)`)
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("watch needs one <queue>, got %q", pos)
	}
	if *from != "" && !keys.StreamReadID(*from) {
		return usagef(`--from must be an event id (<ms>-<seq>, or <ms>, as --json prints them; "0" = the whole stream), got %q`, *from)
	}
	fs.redis.logger = slog.New(slog.NewTextHandler(c.errOut, nil))
	fs.redis.serving = true
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue := pos[0]
	qe, err := ins.Events(ctx, queue, *from)
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(c.out, "watching %s (Ctrl-C to stop)\n", queue)
	}
	return qe.Run(ctx, func(ev drover.Event) error {
		if *asJSON {
			return writeJSONLine(c.out, inspect.EventOf(queue, ev))
		}
		_, err := fmt.Fprintln(c.out, describeEvent(ev))
		return err
	})
}

func describeEvent(ev drover.Event) string {
	s := fmt.Sprintf("%s %-16s", ev.Time().Local().Format("15:04:05.000"), ev.Name)
	if ev.JobID != "" {
		s += " job " + ev.JobID
	}
	if ev.JobName != "" {
		s += fmt.Sprintf(" %q", ev.JobName)
	}
	if ev.Prev != "" {
		s += " (from " + ev.Prev + ")"
	}
	switch ev.Name {
	case drover.EventFailed:
		s += ": " + ev.FailedReason
	case drover.EventDelayed:
		s += " until " + ev.DelayUntil.Local().Format("15:04:05.000")
	case drover.EventCompleted:
		s += " -> " + clip(string(ev.ReturnValue), 80)
	case drover.EventProgress:
		s += " " + clip(string(ev.Data), 80)
	case drover.EventDeduplicated:
		s += fmt.Sprintf(" holds %q (add of job %s dropped)", ev.DeduplicationID, ev.DeduplicatedJobID)
	case drover.EventRetriesExhausted:
		s += fmt.Sprintf(" after %d attempts", ev.AttemptsMade)
	case drover.EventCleaned:
		s += fmt.Sprintf(" %d jobs", ev.Count)
	}
	return s
}
