package bounded

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCall: the call's own answer when it comes first; ctx's cause as soon
// as ctx ends first, while the call goes on; inline without a Done channel.
func TestCall(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	v, err := Call(context.Background(), func(context.Context) (int, error) { return 7, boom })
	if v != 7 || !errors.Is(err, boom) {
		t.Fatalf("background ctx: %d, %v", v, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	v, err = Call(ctx, func(context.Context) (int, error) { return 8, nil })
	if v != 8 || err != nil {
		t.Fatalf("answered first: %d, %v", v, err)
	}

	release := make(chan struct{})
	ended := make(chan struct{})
	cause := errors.New("gave up")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancelCause(cause) }()
	v, err = Call(ctx, func(context.Context) (int, error) {
		defer close(ended)
		<-release // a call that ignores its ctx, as go-redis may
		return 9, nil
	})
	if v != 0 || !errors.Is(err, cause) || !errors.Is(err, ErrNoAnswer) || !errors.Is(err, context.Canceled) ||
		err.Error() != "no answer from Redis in time: gave up (context canceled)" {
		t.Fatalf("ctx ended first: %d, %v", v, err)
	}
	close(release)
	<-ended // the abandoned call finishes on its own and does not block
	cancel()
}
