package difftest

import "testing"

// TestGenerateJitterCannotDecideAnOrder: each run draws its own jitter, so
// a program whose order of promoted jobs depended on it diverged from
// itself (seed 526733769 of a 32-minute campaign: two jobs due about an
// hour after the start, one of them jittered, promoted in either order).
// A program has at most one jittered job, and its delays stay clear of
// the whole hours every other due time is made of.
func TestGenerateJitterCannotDecideAnOrder(t *testing.T) {
	for _, known := range []bool{false, true} {
		for seed := range int64(3000) {
			p := Generate(seed, Config{Known: known})
			var jittered int
			for _, s := range p.Steps {
				for _, a := range s.adds() {
					if a.Backoff == nil || a.Backoff.Jitter == 0 {
						continue
					}
					jittered++
					if a.Backoff.Delay%Hour == 0 || (2*a.Backoff.Delay)%Hour == 0 {
						t.Fatalf("seed %d: jittered backoff of %d ms lands on whole hours", seed, a.Backoff.Delay)
					}
				}
			}
			if jittered > 1 {
				t.Fatalf("seed %d (known %v): %d jobs with a jittered backoff, want at most 1", seed, known, jittered)
			}
		}
	}
}

// TestGenerateTimestampsOffWholeHours: a custom timestamp counts from the
// step's instant, shared by both runs, while a job added without one
// counts from its script's clock, a few ms later in one run than in the
// other; a due time a whole number of hours from the step tied with a
// clock-stamped one in one run only, and the two delayed jobs swapped
// places (campaign seed 93649858). Custom timestamps stay whole minutes
// (delayed scores compare to the minute) off the whole hours, and the
// queue's default options never carry a jittered backoff (every job
// would draw its own due time).
func TestGenerateTimestampsOffWholeHours(t *testing.T) {
	var stamped int
	for _, known := range []bool{false, true} {
		for seed := range int64(3000) {
			p := Generate(seed, Config{Known: known})
			for _, s := range p.Steps {
				for _, a := range s.adds() {
					if a.TimestampAgo == 0 {
						continue
					}
					stamped++
					if a.TimestampAgo%Hour == 0 || a.TimestampAgo%60_000 != 0 {
						t.Fatalf("seed %d: timestamp %d ms before the step, want whole minutes off the whole hours", seed, a.TimestampAgo)
					}
				}
			}
			if d := p.Defaults; d != nil && d.Backoff != nil && d.Backoff.Jitter != 0 {
				t.Fatalf("seed %d: default options with a jittered backoff", seed)
			}
		}
	}
	if stamped == 0 {
		t.Fatal("no program has a custom timestamp")
	}
}

// TestGenerateOtherQueueSteps: flow children in OtherQueueName were reached
// only by work steps and through their parents, so no retry, removal,
// promotion, progress, manual take or read of a child there (whose scripts
// reach its parent in the program's queue) was ever compared. The generator moves
// job steps whose target is such a child, and some queue steps, to that
// queue; a job step moved there never targets a job of the program's
// queue (its target is a child added there, or a name whose step the
// generator replaced: no job).
func TestGenerateOtherQueueSteps(t *testing.T) {
	moved := map[Op]int{}
	for seed := range int64(3000) {
		p := Generate(seed, Config{})
		inMain := map[string]bool{}
		for _, s := range p.Steps {
			for _, a := range s.adds() {
				if !a.OtherQueue && !s.OnOtherQueue() {
					inMain[a.Name] = true
				}
			}
			if !s.OnOtherQueue() || s.Op == OpWork {
				continue
			}
			moved[s.Op]++
			if inMain[s.Job] {
				t.Fatalf("seed %d: %s on %s targets %s, a job of the program's queue", seed, s.Op, OtherQueueName, s.Job)
			}
		}
	}
	for _, op := range []Op{OpRetry, OpRemove, OpPromote, OpProgress, OpFlowRead, OpGetJob, OpDrain, OpClean, OpPause, OpGetJobs, OpStall, OpCheckStalled, OpAdd, OpManualTake} {
		if moved[op] == 0 {
			t.Errorf("no %s on %s in 3000 programs (moved: %v)", op, OtherQueueName, moved)
		}
	}
	t.Logf("steps on %s: %v", OtherQueueName, moved)
}

// TestIDCounterSetBackCollides: a program that sets the id counter back
// to a value it set before draws the same ids again, so it is one of
// IDCounterCollides' (the deliberate "generated ids that repeat"), and its
// batch finishes, which hold and release jobs by id, are plain fetching
// finishes (campaign seed 2002806: a batch took two jobs of one id).
func TestIDCounterSetBackCollides(t *testing.T) {
	set := func(v int64) Step { return Step{Op: OpSetIDCounter, Delay: v} }
	add := Step{Op: OpAdd, Add: &Add{Name: "j1"}}
	for _, c := range []struct {
		steps []Step
		want  bool
	}{
		{[]Step{set(1_000_000), add}, false},
		{[]Step{set(1_000_000), add, set(99_999_999_999_000)}, false},
		{[]Step{set(1_000_000), add, set(1_000_000)}, true},
		{[]Step{set(99_999_999_999_000), add, set(1_000_000)}, true},
	} {
		if got := IDCounterCollides(&Program{Steps: c.steps}); got != c.want {
			t.Errorf("IDCounterCollides(%v) = %v, want %v", c.steps, got, c.want)
		}
	}
	p := Generate(2002806, Config{Known: true})
	if !IDCounterCollides(p) {
		t.Fatalf("seed 2002806 no longer sets its counter back: pick another seed\n%s", p)
	}
	for _, s := range p.Steps {
		if s.Op == OpWork && s.Concurrency > 1 && s.Outcome.FetchNext {
			t.Fatalf("a batch finish in a program whose ids repeat: %+v", s)
		}
		if s.Op == OpAddMixedBurst && s.By == Drover {
			t.Fatalf("a drover mixed burst in a program whose ids repeat: %+v", s)
		}
	}
}
