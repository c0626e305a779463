package drover

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestErrorClass: the error_class a finished attempt is logged with. A
// cancelled or timed-out attempt has a class of its own (it was "error"),
// so an incident can be told from a failing processor by the field alone.
func TestErrorClass(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("smtp refused"), "error"},
		{&stopError{detail: "customer asked"}, "cancelled"},
		{&stopError{timedOut: true, detail: "2s (job timeout)"}, "timed_out"},
		{fmt.Errorf("wrapped: %w", &stopError{timedOut: true}), "timed_out"},
		{Unrecoverable(errors.New("bad address")), "unrecoverable"},
		{&panicError{value: "boom"}, "panic"},
		{context.DeadlineExceeded, "deadline"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("%w: x", ErrInvalidData), "invalid_data"},
	} {
		if got := errorClass(c.err); got != c.want {
			t.Errorf("errorClass(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
