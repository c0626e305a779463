package keys

import (
	"path"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanPattern(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name, prefix, want string
	}{
		{"Default", "", "bull:*"},
		{"Plain", "app", "app:*"},
		{"HashTag", "{app}", "{app}:*"},
		{"GlobCharsEscaped", "a*b?[c]", `a\*b\?\[c\]:*`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ScanPattern(tt.prefix))
		})
	}

	t.Run("MatchesOnlyThePrefix", func(t *testing.T) {
		t.Parallel()
		ok, err := path.Match(ScanPattern("a*"), "a*:q:meta")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = path.Match(ScanPattern("a*"), "ab:q:meta")
		require.NoError(t, err)
		require.False(t, ok)
	})
}

func TestQueueOf(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name, prefix, key, want string
		ok                      bool
	}{
		{"Meta", "bull", "bull:mail:meta", "mail", true},
		{"DefaultPrefix", "", "bull:mail:events", "mail", true},
		{"HashTaggedQueue", "bull", "bull:{mail}:wait", "{mail}", true},
		{"JobHashIsNot", "bull", "bull:mail:42", "", false},
		{"JobLockIsNot", "bull", "bull:mail:42:lock", "", false},
		{"DedupKeyIsNot", "bull", "bull:mail:de:x", "", false},
		{"OtherPrefix", "bull", "app:mail:meta", "", false},
		{"NoQueue", "bull", "bull::meta", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := QueueOf(tt.prefix, tt.key)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}
