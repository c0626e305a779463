package difftest

import (
	"errors"
	"strings"
	"testing"

	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestKnownInputsOfTheProgramQueue: the known entries whose inputs are a
// drain or pause after a scheduler, or a metrics worker before
// removeOrphanedJobs, are about the program's queue (its schedulers, its
// metrics keys). The same steps on OtherQueueName must not make them
// explain a divergence, which would then be reported as known.
func TestKnownInputsOfTheProgramQueue(t *testing.T) {
	sched := Step{Op: OpUpsertScheduler, Add: &Add{Name: "j1"}, Scheduler: &Scheduler{ID: "s1", Every: Hour, Start: Hour}}
	again := sched
	for _, c := range []struct {
		name string
		uses func(*Program) bool
		p    *Program
	}{
		{"drain", schedulerThenDrain, &Program{Steps: []Step{sched, {Op: OpDrain, OtherQueue: true}}}},
		{"pause", upsertAgainWhilePaused, &Program{Steps: []Step{sched, {Op: OpPause, OtherQueue: true}, again}}},
		{"metrics", orphansAfterFailedMetrics, &Program{Steps: []Step{
			{Op: OpWork, OtherQueue: true, Metrics: 1, Outcome: &Outcome{Kind: "fail"}}, {Op: OpRemoveOrphanedJobs},
		}}},
	} {
		if c.uses(c.p) {
			t.Errorf("%s on %s: the entry explains it", c.name, OtherQueueName)
		}
		for i := range c.p.Steps {
			c.p.Steps[i].OtherQueue = false
		}
		if !c.uses(c.p) {
			t.Errorf("%s on the program's queue: the entry does not explain it", c.name)
		}
	}
}

// TestKnownRefusalMasksTheOtherQueue: an add both refuse may draw BullMQ's
// id counter first (a deliberate difference, masked to classify); an add
// to OtherQueueName draws that queue's counter, which the classification
// must mask too, or the known difference is reported as new.
func TestKnownRefusalMasksTheOtherQueue(t *testing.T) {
	node := &statedump.Snapshot{Keys: map[string]*statedump.Key{
		"q2:id": {Type: statedump.TypeString, String: "3"},
	}}
	mix := &statedump.Snapshot{Keys: map[string]*statedump.Key{}}
	refusal := errors.New("refused")
	if k := KnownForRefusal(refusal, true, node, mix, "q"); k != nil {
		t.Fatalf("the program's queue's mask explains a difference in %s: %s", OtherQueueName, k.Name)
	}
	k := KnownForRefusal(refusal, true, node, mix, "q", OtherQueueName)
	if k == nil || !strings.Contains(k.Name, "id counter") {
		t.Fatalf("a refused add's counter in %s: got %v, want the id counter entry", OtherQueueName, k)
	}
}

// TestSortEventsAfterTrim: a step's range of the events stream is named by
// stream ids, so a trim that removed entries from the head (a capped
// stream) sorts what is left of the step's events, and no other step's.
func TestSortEventsAfterTrim(t *testing.T) {
	entry := func(id, ev string) statedump.StreamEntry {
		return statedump.StreamEntry{ID: id, Fields: []string{"event", ev}}
	}
	// The stream as a trim left it: 5-0 and earlier are gone; the step
	// wrote 9-0 .. 10-1 after 8-0.
	st := []statedump.StreamEntry{entry("8-0", "z"), entry("9-0", "waiting"), entry("10-0", "removed"), entry("10-1", "added"), entry("11-0", "a")}
	SortEvents(st, EventRange{After: "8-0", Upto: "10-1"})
	var got []string
	for _, e := range st {
		got = append(got, e.ID+" "+e.Fields[1])
	}
	if want := "8-0 z,10-1 added,10-0 removed,9-0 waiting,11-0 a"; strings.Join(got, ",") != want {
		t.Fatalf("sorted %v, want %s", got, want)
	}
	// A range a trim cut into (3 written, 2 left): which entries are left
	// depends on the order they were written in, so they are masked.
	st = []statedump.StreamEntry{entry("9-0", "waiting"), entry("10-0", "removed"), entry("11-0", "a")}
	SortEvents(st, EventRange{After: "8-0", Upto: "10-0", Written: 3})
	if st[0].Fields[1] != trimmedCascade[1] || st[1].Fields[1] != trimmedCascade[1] || st[2].Fields[1] != "a" {
		t.Fatalf("a cut range is not masked, or more is: %v", st)
	}
	// A range wholly trimmed away sorts nothing.
	st = []statedump.StreamEntry{entry("20-0", "b"), entry("21-0", "a")}
	SortEvents(st, EventRange{After: "2-0", Upto: "5-0"})
	if st[0].ID != "20-0" {
		t.Fatalf("a trimmed-away range sorted later entries: %v", st)
	}
}
