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
