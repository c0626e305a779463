package drover

import (
	"fmt"
	"strings"

	"github.com/seed40057009/drover/internal/keys"
)

// ValidateJobID reports whether id may be used as a custom JobID: BullMQ's
// rules (not empty, not "0" or "0:…", not an integer, no ':') plus a check
// that it does not collide with a queue key name. The error names the id.
func ValidateJobID(id string) error {
	if err := keys.ValidateJobID(id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidJobID, err)
	}
	return nil
}

// JobIDOf builds a deterministic job id from stable business parts, e.g.
// JobIDOf("charge", orderID) = "charge/A-17". The same parts always give the
// same id, so the same operation submitted twice becomes one job (the second
// Add reports AddDuplicate). Parts are joined with '/'; '%', '/', ':' and
// control characters inside a part are percent-escaped, so ("a/b", "c") and
// ("a", "b/c") give different ids and no id contains ':'.
//
// Build ids from what identifies the operation (an order, a user and a
// template), never from what differs between submissions (a timestamp, a
// random value). It returns an error naming the problem when a part is empty
// or the result breaks BullMQ's id rules (e.g. an integer-looking id).
func JobIDOf(parts ...string) (string, error) {
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: JobIDOf needs at least one part", ErrInvalidJobID)
	}
	var b strings.Builder
	for i, p := range parts {
		if p == "" {
			return "", fmt.Errorf("%w: JobIDOf part %d is empty", ErrInvalidJobID, i)
		}
		if i > 0 {
			b.WriteByte('/')
		}
		for j := 0; j < len(p); j++ {
			c := p[j]
			if c == '%' || c == '/' || c == ':' || c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, "%%%02X", c)
				continue
			}
			b.WriteByte(c)
		}
	}
	id := b.String()
	if err := ValidateJobID(id); err != nil {
		return "", err
	}
	return id, nil
}
