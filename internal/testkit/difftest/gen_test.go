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
