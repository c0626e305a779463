package drover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
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

// TestFlowProducerDefaultLogger: a FlowProducer without a Logger warns on
// stderr as a Queue and a Worker do (it discarded its warnings), and so do
// the queues it adds through.
func TestFlowProducerDefaultLogger(t *testing.T) {
	var buf bytes.Buffer
	old := defaultLogOutput
	defaultLogOutput = &buf
	defer func() { defaultLogOutput = old }()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer func() { _ = rdb.Close() }()
	fp, err := NewFlowProducer(rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := fp.queues.get(PrefixDefault, "mail")
	if err != nil {
		t.Fatal(err)
	}
	fp.opts.Logger.Warn("from the producer")
	q.opts.Logger.Warn("from its queue")
	for _, want := range []string{`level=WARN msg="from the producer"`, `level=WARN msg="from its queue"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("stderr has %q, want a line with %q", buf.String(), want)
		}
	}
}
