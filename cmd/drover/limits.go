package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
)

func init() {
	commands["limits"] = commandInfo{
		summary: "show or change a queue's global concurrency and rate limit, or block it for a while",
		make:    func(m *Main) command { return &limitsCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// limitsCmd is `drover limits`: a read, or with change flags one change
// (inspect.LimitsChange) audited as set-limits, its Detail naming it.
type limitsCmd struct {
	out, errOut io.Writer
}

func (c *limitsCmd) Run(ctx context.Context, args []string) (err error) {
	fs := newQueueFlags("limits", c.out, "Usage: drover limits <queue> [--concurrency N|none] [--rate MAX/DURATION|none]\n"+
		"                     [--block DURATION] [--unblock] [--json]\n\n"+
		"Shows the queue's limits on taking jobs: the global concurrency (and whether the active jobs\n"+
		"reached it), the global rate limit, and how long the rate limiter still refuses activations.\n"+
		"Every worker, Node's and drover's, obeys them. With a flag it changes them first (audited as\n"+
		"set-limits): --concurrency caps the queue's active jobs, --rate allows at most MAX\n"+
		"activations per DURATION (e.g. 100/1s), \"none\" removes either; --block stops the workers that\n"+
		"apply a limit from taking jobs for DURATION (BullMQ's queue.rateLimit), --unblock ends that or\n"+
		"the current rate-limit window now.")
	conc := fs.String("concurrency", "", "cap the queue's active jobs at N (at least 1), or none")
	rate := fs.String("rate", "", "allow at most MAX activations per DURATION (e.g. 100/1s), or none")
	block := fs.duration("block", 0, "stop the workers that apply a limit from taking jobs for this long")
	unblock := fs.Bool("unblock", false, "end a --block, or the current rate-limit window, now")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("limits needs one <queue>")
	}
	queue := pos[0]
	// Every flag is read and the change checked whole before anything
	// changes: a typo in the second flag must not leave the first applied.
	var change inspect.LimitsChange
	switch v := *conc; v {
	case "":
	case "none":
		change.RemoveConcurrency = true
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usagef("--concurrency takes a whole number of at least 1, or none, got %q", v)
		}
		change.Concurrency = n
	}
	switch v := *rate; v {
	case "":
	case "none":
		change.RemoveRateLimit = true
	default:
		n, window, err := parseRate(v)
		if err != nil {
			return err
		}
		change.RateLimit = &inspect.RateLimit{Max: n, Duration: window}
	}
	blockGiven := false
	fs.Visit(func(f *flag.Flag) { blockGiven = blockGiven || f.Name == "block" })
	switch {
	case *block < 0:
		return usagef("--block must not be negative, got %s", *block)
	case blockGiven && *block == 0:
		// It showed the limits and changed nothing, without a word.
		return usagef("--block 0 blocks nothing: give a duration of at least 1ms, or --unblock to end a block")
	case *block > 0 && *unblock:
		return usagef("--block and --unblock exclude each other: give one")
	}
	change.Block, change.Unblock = *block, *unblock
	changing := change != (inspect.LimitsChange{})
	if changing {
		if err := change.Validate(); err != nil {
			return usagef("%v", err)
		}
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	if _, err := ins.QueueInfo(ctx, queue); err != nil {
		return err
	}
	if changing {
		e := dashboard.AuditEntry{Action: "set-limits", Queue: queue, Detail: change.String()}
		_, err := ins.SetLimits(ctx, queue, change)
		fs.redis.record(ctx, c.errOut, e, err)
		if err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(c.out, "%s: set %s\n", queue, change)
		}
	}
	info, err := ins.QueueInfo(ctx, queue)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.out, info.Limits)
	}
	printLimits(c.out, *info)
	return nil
}

// parseRate reads MAX/DURATION (e.g. 100/1s).
func parseRate(v string) (int, time.Duration, error) {
	m, d, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(m)
	if !ok || err != nil || n < 1 {
		return 0, 0, usagef("--rate takes MAX/DURATION with MAX at least 1 (e.g. 100/1s), or none, got %q", v)
	}
	window, err := time.ParseDuration(d)
	if err != nil || window < time.Millisecond {
		return 0, 0, usagef("--rate's DURATION must be a duration of at least 1ms (e.g. 100/1s), got %q", v)
	}
	return n, window, nil
}

// printLimits writes a queue's limits, one line each.
func printLimits(out io.Writer, q inspect.QueueInfo) {
	l := q.Limits
	switch {
	case l.Concurrency == nil:
		fmt.Fprintf(out, "concurrency:  none\n")
	case l.Maxed:
		fmt.Fprintf(out, "concurrency:  %d, maxed: %d active jobs, no worker takes a job until one finishes\n", *l.Concurrency, q.Counts.Active)
	default:
		fmt.Fprintf(out, "concurrency:  %d (%d active)\n", *l.Concurrency, q.Counts.Active)
	}
	if r := l.RateLimit; r != nil {
		fmt.Fprintf(out, "rate limit:   %d per %s\n", r.Max, r.Duration)
	} else {
		fmt.Fprintf(out, "rate limit:   none\n")
	}
	if l.RateLimitedFor > 0 {
		fmt.Fprintf(out, "rate-limited: for %s more (workers that apply a limit take no job)\n", roundLimit(l.RateLimitedFor))
	} else {
		fmt.Fprintf(out, "rate-limited: no\n")
	}
}

// roundLimit rounds a limiter's remaining time for people: to the second,
// or to the millisecond under one.
func roundLimit(d time.Duration) time.Duration {
	if r := d.Round(time.Second); r > 0 {
		return r
	}
	return d.Round(time.Millisecond)
}
