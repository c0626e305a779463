package interoptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/difftest"
)

// eventsSyncTimeout bounds how long the readers of the mixed run's events
// stream may take to deliver the entries a step wrote.
const eventsSyncTimeout = 10 * time.Second

// eventReaders are a Node QueueEvents (in the oracle) and a drover
// QueueEvents both reading a run's events stream from its start: after
// every step each must have delivered the step's entries, and the two
// deliveries must agree (names, job ids, every field as each decodes it).
type eventReaders struct {
	queue string
	dqe   *drover.QueueEvents
	// nodeDone and dDone are how many delivered events were compared;
	// dEvents are the drover reader's.
	nodeDone int
	dEvents  []drover.Event
	dDone    int
	// target is the stream's last id the readers last caught up with.
	target string
}

// startEventReaders starts both readers on the run's (still empty)
// streams: its queue's and OtherQueueName's.
func (r *programRun) startEventReaders(ctx context.Context) {
	r.t.Helper()
	for _, q := range []string{queueName, difftest.OtherQueueName} {
		require.NoError(r.t, r.o.StartQueueEvents(ctx, r.prefix, q))
		dqe, err := drover.NewQueueEvents(r.rdb, q, &drover.QueueEventsOptions{Prefix: r.prefix, LastEventID: "0", BlockTimeout: 20 * time.Millisecond})
		require.NoError(r.t, err)
		r.events = append(r.events, &eventReaders{queue: q, dqe: dqe, target: "0-0"})
	}
}

// streamIDLess reports whether stream id a comes before b.
func streamIDLess(a, b string) bool {
	parse := func(id string) (int64, int64) {
		ms, seq, _ := strings.Cut(id, "-")
		m, _ := strconv.ParseInt(ms, 10, 64)
		s, _ := strconv.ParseInt(seq, 10, 64)
		return m, s
	}
	am, as := parse(a)
	bm, bs := parse(b)
	return am < bm || (am == bm && as < bs)
}

// deliveredEvents waits until the readers of each stream delivered its
// entries up to its newest and compares what they delivered since the
// last call: the differences, none when they agree.
func (r *programRun) deliveredEvents() []string {
	r.t.Helper()
	var out []string
	for _, er := range r.events {
		out = append(out, r.delivered(er)...)
	}
	return out
}

func (r *programRun) delivered(er *eventReaders) []string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventsSyncTimeout)
	defer cancel()
	events := keys.New(r.prefix, er.queue).Events()
	last, err := r.rdb.XRevRangeN(ctx, events, "+", "-", 1).Result()
	require.NoError(r.t, err)
	if len(last) == 0 || !streamIDLess(er.target, last[0].ID) {
		return nil // nothing new (or the stream is gone: obliterated)
	}
	target := last[0].ID
	er.target = target
	for d := er.dqe.LastID(); d == "0" || streamIDLess(d, target); d = er.dqe.LastID() {
		ev, err := er.dqe.Next(ctx)
		require.NoError(r.t, err, "drover QueueEvents did not deliver up to %s", target)
		er.dEvents = append(er.dEvents, ev)
	}
	var nodeEvents []bullmqoracle.QueueEvent
	for {
		nodeEvents, err = r.o.QueueEvents(ctx, r.prefix, er.queue)
		require.NoError(r.t, err)
		lastID := ""
		for _, e := range nodeEvents {
			if e.ID != "" {
				lastID = e.ID
			}
		}
		if lastID != "" && !streamIDLess(lastID, target) {
			break
		}
		require.NoError(r.t, ctx.Err(), "Node QueueEvents did not deliver up to %s: %v", target, nodeEvents)
		time.Sleep(2 * time.Millisecond)
	}
	nodeNew, dNew := nodeEvents[er.nodeDone:], er.dEvents[er.dDone:]
	er.nodeDone, er.dDone = len(nodeEvents), len(er.dEvents)
	// Matched by stream id: an entry written and deleted within one step
	// (obliterate pauses the queue first, "paused", then deletes the
	// stream) may or may not have reached a reader that blocks on the
	// stream; such an entry, no longer in the stream, is not compared.
	nodeViews, dViews := map[string]string{}, map[string]string{}
	var ids []string
	for _, e := range nodeNew {
		if e.ID == "" {
			return []string{"Node QueueEvents: " + nodeEventView(e)}
		}
		nodeViews[e.ID] = nodeEventView(e)
		ids = append(ids, e.ID)
	}
	for _, e := range dNew {
		dViews[e.ID] = droverEventView(e)
		if _, ok := nodeViews[e.ID]; !ok {
			ids = append(ids, e.ID)
		}
	}
	var out []string
	for _, id := range ids {
		n, d := nodeViews[id], dViews[id]
		if n == d {
			continue
		}
		if n == "" || d == "" {
			gone, err := r.rdb.XRange(ctx, events, id, id).Result()
			require.NoError(r.t, err)
			if len(gone) == 0 {
				continue
			}
		}
		out = append(out, fmt.Sprintf("delivered event %s of %s: Node QueueEvents %q, drover QueueEvents %q", id, er.queue, n, d))
	}
	return out
}

// nodeEventView renders an event a Node QueueEvents emitted: its name, id
// and every field as BullMQ hands it to a listener (progress data and a
// return value parsed, a delay a number, the rest strings), as JSON.
func nodeEventView(e bullmqoracle.QueueEvent) string {
	if e.Name == "error" {
		return fmt.Sprintf("error %v", e.Fields)
	}
	parts := []string{e.Name, e.ID}
	for _, k := range slices.Sorted(maps.Keys(e.Fields)) {
		b, _ := json.Marshal(e.Fields[k])
		parts = append(parts, k+"="+canonicalJSON(b))
	}
	return strings.Join(parts, " ")
}

// droverEventView renders a drover Event as nodeEventView does a Node one,
// each field Node parses from drover's typed field (Data, ReturnValue,
// DelayUntil), the fields drover types from the typed field too, the rest
// from Fields; a drained event carries none (Node emits only its id).
func droverEventView(e drover.Event) string {
	parts := []string{string(e.Name), e.ID}
	if e.Name == drover.EventDrained {
		return strings.Join(parts, " ")
	}
	str := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Fields)) {
		v := str(e.Fields[k])
		switch {
		case k == "event":
			continue
		case k == "data" && e.Name == drover.EventProgress:
			v = "undecoded"
			if e.Data != nil {
				v = canonicalJSON(e.Data)
			}
		case k == "returnvalue" && e.Name == drover.EventCompleted:
			v = "undecoded"
			if e.ReturnValue != nil {
				v = canonicalJSON(e.ReturnValue)
			}
		case k == "delay" && e.Name == drover.EventDelayed:
			v = strconv.FormatInt(e.DelayUntil.UnixMilli(), 10)
		case k == "jobId":
			v = str(e.JobID)
		case k == "prev":
			v = str(e.Prev)
		case k == "name" && e.Name == drover.EventAdded:
			v = str(e.JobName)
		case k == "failedReason":
			v = str(e.FailedReason)
		case k == "deduplicationId":
			v = str(e.DeduplicationID)
		case k == "deduplicatedJobId":
			v = str(e.DeduplicatedJobID)
		case k == "attemptsMade" && e.Name == drover.EventRetriesExhausted:
			v = str(strconv.Itoa(e.AttemptsMade))
		case k == "count" && e.Name == drover.EventCleaned:
			v = str(strconv.Itoa(e.Count))
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}
