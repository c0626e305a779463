package keys

import (
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
