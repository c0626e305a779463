package keys

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateJobID(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		id string
		ok bool
	}{
		{"abc", true},
		{"007", true},
		{"-0", true},
		{"+5", true},
		{"1e3", true},
		{"12345678901234567", true}, // parseInt rounds it to ...568
		{"1000000000000000000000", true},
		{"a:b:c", true},
		{"123", false},
		{"-5", false},
		{"1234567890123456", false},
		{"9007199254740992", false},
		{"100000000000000000000", false},
		{"-100000000000000000000", false},
		{"0", false},
		{"0:x", false},
		{"a:b", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"wait", false},
	} {
		err := ValidateJobID(tt.id)
		require.Equal(t, tt.ok, err == nil, "id %q: %v", tt.id, err)
	}
}

// TestCheckStoredJobID: ids that name one of the queue's own keys are
// refused; every id a stored job can have (Node's included: integers,
// "." and the 3-part ids of scheduler runs) passes.
func TestCheckStoredJobID(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		id string
		ok bool
	}{
		{"", true}, // names no key; callers answer it as a missing job
		{"1", true},
		{"abc", true},
		{".", true},
		{"priority", true}, // a BullMQ 3 key name, no key in 6.7: Node may use it as an id
		{"a:b:c", true},
		{"repeat:s1:1796525764811", true},
		{"a:b:logs", true}, // a 3-part id Node accepts
		{"meta", false},
		{"wait", false},
		{"stalled", false},
		{"stalled-check", false},
		{"repeat", false},
		{"repeat:s1", false},
		{"metrics:completed", false},
		{"metrics:completed:data", false},
		{"de:x", false},
		{"dn:x", false},
		{"marker:w1", false},
		{"add:tok.1", false},
		{"call:tok.1", false},
		{"add:a:b", true}, // a 3-part id Node accepts; drover's records have one ':'
		{"de:a:b", false}, // the key of deduplication id "a:b"
		{"1:logs", false},
		{"1:lock", false},
		{"p:dependencies", false},
		{"repeat:s1:1796525764811:lock", false},
	} {
		err := CheckStoredJobID(tt.id)
		require.Equal(t, tt.ok, err == nil, "id %q: %v", tt.id, err)
	}
}

// TestIntegerLookingShortcut holds isIntegerLooking's shortcut for ids of
// up to 15 digits to the float round trip it skips (parseInt, then
// Number's rendering).
func TestIntegerLookingShortcut(t *testing.T) {
	t.Parallel()
	roundTrip := func(id string) bool {
		f, err := strconv.ParseFloat(id, 64)
		if err != nil || f == 0 && id != "0" {
			return false
		}
		return strconv.FormatFloat(f, 'f', -1, 64) == id
	}
	ids := []string{"0", "-0", "00", "-00", "1", "-1", "01", "-01", "10", "007", "999999999999999",
		"-999999999999999", "099999999999999", "100000000000000", "123456789012345", "9007199254740992"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := 1 + r.IntN(15)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		if r.IntN(4) == 0 {
			b = append([]byte{'-'}, b...)
		}
		ids = append(ids, string(b))
	}
	for _, id := range ids {
		require.Equal(t, roundTrip(id), isIntegerLooking(id), "id %q", id)
	}
}
