package drover

import "testing"

// TestLegacyRepeatKey: the key shapes BullMQ 6.7's workers take for a
// legacy repeatable job's (hasLegacyRepeatableKeyShape), and ids that are
// a job scheduler's.
func TestLegacyRepeatKey(t *testing.T) {
	for key, want := range map[string]bool{
		"job::::5000":                                   true,
		"job:k2::UTC:0 * * * *":                         true,
		"job:id:1700000000000::5000":                    true,
		"job:id:1700000000000:Europe/Paris:*/5 * * * *": true,
		"job:id:soon::5000":                             false, // endDate not digits
		"job::::":                                       false, // no suffix
		"job::::5000ms":                                 false, // suffix neither digits nor a pattern
		"s1":                                            false,
		"a:b:c:d":                                       false, // four segments
		"tenant:7:reports:x":                            false,
	} {
		if got := legacyRepeatKey(key); got != want {
			t.Errorf("legacyRepeatKey(%q) = %v, want %v", key, got, want)
		}
	}
}
