package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/seed40057009/drover/inspect"
)

func init() {
	commands["queues"] = commandInfo{
		summary: "list the queues under a prefix with their job counts",
		make:    func(m *Main) command { return &queuesCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

type queuesCmd struct {
	out    io.Writer
	errOut io.Writer // the inspector's warnings (a Redis that refuses SCAN)
}

// queueRow is one queue in `drover queues --json`.
type queueRow struct {
	inspect.QueueInfo
	Alerts []inspect.Alert `json:"alerts"`
	// Error says why the queue could not be read (its counts are then
	// zero and mean nothing); absent for a queue that was read.
	Error string `json:"error,omitempty"`
}

func (c *queuesCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("queues", c.out, "Usage: drover queues [--redis URL] [--prefix P] [--json] [--scan]\n\nLists the queues under the prefix with their job counts and storm alerts. The list comes from\nthe queue registry drover's producers and workers write, the queues of the connected workers\nand a short scan step; the first listing under a prefix scans the keyspace once (docs/design.md).")
	asJSON := fs.jsonFlag()
	rescan := fs.Bool("scan", false, "scan the whole keyspace for queues first (finds a queue only Node producers wrote since the last scan at once; about 1 s of Redis time per 1M keys)")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("queues takes no arguments, got %q", pos)
	}
	// Warnings go to stderr: on a Redis that refuses SCAN, the one that
	// says a queue only Node producers write is not listed.
	fs.redis.logger = slog.New(slog.NewTextHandler(c.errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	if *rescan {
		if _, err := ins.Rescan(ctx); err != nil {
			return err
		}
	}
	names, err := ins.Queues(ctx)
	if err != nil {
		return err
	}
	// One queue that cannot be read (a key of the wrong type, say) is
	// reported and the others are still listed: an operator looking for
	// what is wrong needs the rest of the picture, not one error.
	rows := make([]queueRow, 0, len(names))
	var unreadable []string
	for _, name := range names {
		r, err := readQueueRow(ctx, ins, name)
		if errors.Is(err, inspect.ErrQueueNotFound) {
			continue // gone since the listing
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			r = queueRow{QueueInfo: inspect.QueueInfo{Name: name}, Alerts: []inspect.Alert{}, Error: err.Error()}
			unreadable = append(unreadable, err.Error())
		}
		rows = append(rows, r)
	}
	if err := c.print(rows, *asJSON, ins.Prefix()); err != nil {
		return err
	}
	if len(unreadable) > 0 {
		return fmt.Errorf("%d of %d queues could not be read: %s", len(unreadable), len(rows), strings.Join(unreadable, "; "))
	}
	return nil
}

// readQueueRow reads one queue's counts, limits and storm alerts.
func readQueueRow(ctx context.Context, ins *inspect.Inspector, name string) (queueRow, error) {
	info, err := ins.QueueInfo(ctx, name)
	if err != nil {
		return queueRow{}, err
	}
	r := queueRow{QueueInfo: *info, Alerts: []inspect.Alert{}}
	if info.Counts.Delayed > 0 {
		st, err := ins.DelayedStats(ctx, name)
		if err != nil {
			return queueRow{}, err
		}
		r.Alerts = st.Alerts
	}
	return r, nil
}

func (c *queuesCmd) print(rows []queueRow, asJSON bool, prefix string) error {
	if asJSON {
		return writeJSON(c.out, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(c.out, "no queues under prefix %q\n", prefix)
		return nil
	}
	t := newTable(c.out, "QUEUE", "STATE", "WAITING", "PRIORITIZED", "ACTIVE", "DELAYED", "WAITING-CHILDREN", "COMPLETED", "FAILED", "ALERTS", "LIMITS")
	for _, r := range rows {
		if r.Error != "" {
			t.row(r.Name, "unreadable", "-", "-", "-", "-", "-", "-", "-", "-", "-")
			continue
		}
		state := "running"
		if r.Paused {
			state = "paused"
			if !r.PausedSince.IsZero() {
				state += " " + time.Since(r.PausedSince.Time).Round(time.Second).String()
			}
		}
		alerts := "-"
		if len(r.Alerts) > 0 {
			alerts = r.Alerts[0].Message
		}
		n := r.Counts
		t.row(r.Name, state, n.Waiting, n.Prioritized, n.Active, n.Delayed, n.WaitingChildren, n.Completed, n.Failed, alerts, limitsText(r.QueueInfo))
	}
	return t.flush()
}

// limitsText is a queue's limits for the LIMITS column: what bites first
// ("maxed 5/5" when the active jobs reached the global concurrency,
// "rate-limited 12s" while the limiter refuses), then the limits in force
// ("concurrency 5", "max 100/1s"); "-" for none.
func limitsText(q inspect.QueueInfo) string {
	l := q.Limits
	var parts []string
	if l.Concurrency != nil {
		if l.Maxed {
			parts = append(parts, fmt.Sprintf("maxed %d/%d", q.Counts.Active, *l.Concurrency))
		} else {
			parts = append(parts, fmt.Sprintf("concurrency %d", *l.Concurrency))
		}
	}
	if l.RateLimitedFor > 0 {
		parts = append(parts, "rate-limited "+roundLimit(l.RateLimitedFor).String())
	}
	if r := l.RateLimit; r != nil {
		parts = append(parts, fmt.Sprintf("max %d/%s", r.Max, r.Duration))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
