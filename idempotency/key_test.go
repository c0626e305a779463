package idempotency_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
)

func TestOpKey(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		parts []string
		want  string
	}{
		{"OnePart", []string{"order"}, "order"},
		{"PartsAreJoinedWithColons", []string{"charge", "order", "42"}, "charge:order:42"},
		{"ColonInAPartIsEscaped", []string{"a:b", "c"}, `a\:b:c`},
		{"ColonInTheOtherPartGivesAnotherKey", []string{"a", "b:c"}, `a:b\:c`},
		{"BackslashIsEscaped", []string{`a\`, "b"}, `a\\:b`},
		{"EscapedColonLookalikeStaysDistinct", []string{`a\:b`}, `a\\\:b`},
		{"EmptyPartsCount", []string{"a", ""}, "a:"},
		{"NoParts", nil, ""},
		{"UnicodeIsKept", []string{"café", "ü"}, "café:ü"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, idempotency.OpKey(tt.parts...))
		})
	}

	t.Run("DifferentPartListsNeverCollide", func(t *testing.T) {
		t.Parallel()

		lists := [][]string{
			{"a:b", "c"}, {"a", "b:c"}, {"a", "b", "c"}, {"a:b:c"}, {`a\`, "b"}, {`a\:b`},
			{"a", ""}, {"a:"}, {"", "a"}, {":a"}, {""}, {"", ""}, {`\`}, {`\\`}, {`\`, `\`},
		}
		seen := make(map[string][]string)
		for _, parts := range lists {
			key := idempotency.OpKey(parts...)
			if prev, dup := seen[key]; dup {
				t.Fatalf("OpKey(%q) and OpKey(%q) both give %q", prev, parts, key)
			}
			seen[key] = parts
		}
	})
}

func TestValidateKey(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		key     string
		wantErr string
	}{
		{"Plain", "charge:order:42", ""},
		{"MaxLength", strings.Repeat("k", idempotency.MaxKeyLen), ""},
		{"MultiByteAtMaxLength", strings.Repeat("é", 127) + "a", ""},
		{"Empty", "", `idempotency: invalid operation key "": it is empty`},
		{"OneByteTooLong", strings.Repeat("k", idempotency.MaxKeyLen+1),
			`idempotency: invalid operation key "` + strings.Repeat("k", 64) + `"...: it is 256 bytes, more than the maximum of 255`},
		{"MultiByteTooLong", strings.Repeat("é", 128),
			`idempotency: invalid operation key "` + strings.Repeat("é", 32) + `"...: it is 256 bytes, more than the maximum of 255`},
		{"InvalidUTF8", "\xc3\x28", `idempotency: invalid operation key "\xc3(": it is not valid UTF-8`},
		{"NUL", "a\x00", `idempotency: invalid operation key "a\x00": it contains a NUL byte`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := idempotency.ValidateKey(tt.key)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, idempotency.ErrInvalidKey)
			require.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestKeyContext(t *testing.T) {
	t.Parallel()

	t.Run("RoundTrips", func(t *testing.T) {
		t.Parallel()

		key, ok := idempotency.KeyFrom(idempotency.WithKey(context.Background(), "k:1"))
		require.True(t, ok)
		require.Equal(t, "k:1", key)
	})

	t.Run("AbsentFromAPlainContext", func(t *testing.T) {
		t.Parallel()

		key, ok := idempotency.KeyFrom(context.Background())
		require.False(t, ok)
		require.Empty(t, key)
	})

	t.Run("InnerKeyWins", func(t *testing.T) {
		t.Parallel()

		ctx := idempotency.WithKey(idempotency.WithKey(context.Background(), "outer"), "inner")
		key, _ := idempotency.KeyFrom(ctx)
		require.Equal(t, "inner", key)
	})
}

func TestStatusString(t *testing.T) {
	t.Parallel()

	require.Equal(t, "claimed", idempotency.Claimed.String())
	require.Equal(t, "already_completed", idempotency.AlreadyCompleted.String())
	require.Equal(t, "in_progress_elsewhere", idempotency.InProgressElsewhere.String())
	require.Equal(t, "Status(0)", idempotency.Status(0).String())
}
