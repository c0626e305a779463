package idempotency

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest operation key, in bytes. Longer business
// identities should be hashed into a key (see [OpKey]).
const MaxKeyLen = 255

// ValidateKey reports whether key can be an operation key: not empty, at
// most [MaxKeyLen] bytes, valid UTF-8 without NUL bytes (PostgreSQL text
// cannot hold NUL, and the ledger must accept the same keys on every
// database). The error wraps [ErrInvalidKey] and quotes the key. ClaimTx and
// Do validate for you; call ValidateKey to reject bad input before opening a
// transaction, or to make a job unrecoverable instead of retrying it.
func ValidateKey(key string) error {
	var reason string
	switch {
	case key == "":
		reason = "it is empty"
	case len(key) > MaxKeyLen:
		reason = fmt.Sprintf("it is %d bytes, more than the maximum of %d", len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		reason = "it is not valid UTF-8"
	case strings.IndexByte(key, 0) >= 0:
		reason = "it contains a NUL byte"
	default:
		return nil
	}
	return fmt.Errorf("%w %s: %s", ErrInvalidKey, quoteKey(key), reason)
}

// quoteKey quotes a key for an error message, cutting a long one short.
func quoteKey(key string) string {
	const show = 64
	if len(key) <= show {
		return fmt.Sprintf("%q", key)
	}
	return fmt.Sprintf("%q...", key[:show])
}

// OpKey builds an operation key from the stable parts of a business
// operation: what is done and to what, e.g.
//
//	key := idempotency.OpKey("charge", orderID, "attempt-group", groupID)
//
// The parts are joined with ':' after escaping '\' as `\\` and ':' as `\:`
// within each part, so different part lists never build the same key:
// ("a:b", "c") gives `a\:b:c` and ("a", "b:c") gives `a:b\:c`. The same parts
// always give the same key, in every process and version of drover.
//
// Build keys from what identifies the operation, never from what varies
// between attempts (job id of a re-added job, attempt number, time). OpKey
// does not validate; ClaimTx and Do reject a key that comes out empty or
// longer than MaxKeyLen.
func OpKey(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(':')
		}
		for j := 0; j < len(p); j++ {
			if c := p[j]; c == '\\' || c == ':' {
				b.WriteByte('\\')
			}
			b.WriteByte(p[j])
		}
	}
	return b.String()
}

type keyContextKey struct{}

// WithKey returns a copy of ctx that carries the operation key, for code
// further down (an HTTP client wrapper, say) that sends it upstream as an
// idempotency key. [Ledger.Do] calls it for the ctx it hands its function.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyContextKey{}, key)
}

// KeyFrom returns the operation key that [WithKey] put in ctx, if any.
func KeyFrom(ctx context.Context) (string, bool) {
	key, ok := ctx.Value(keyContextKey{}).(string)
	return key, ok
}
