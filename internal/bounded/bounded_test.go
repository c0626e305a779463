package bounded

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

	// Ended before the call: fn is not run, and nothing is in doubt.
	ran := false
	v, err = Call(ctx, func(context.Context) (int, error) { ran = true; return 10, nil })
	if v != 0 || ran || !errors.Is(err, cause) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrNoAnswer) {
		t.Fatalf("ctx ended before: %d, ran %v, %v", v, ran, err)
	}
}

// TestNeeded: a call goes through Call only under a deadline that comes
// before the client's own timeouts would end it.
func TestNeeded(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: time.Second, WriteTimeout: time.Second,
		DialTimeout: time.Second, PoolTimeout: time.Second})
	defer rdb.Close()
	budget := ClientBudget(rdb)
	if budget != 4*time.Second {
		t.Fatalf("budget %s, want 4s", budget)
	}
	noTimeout := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: -1})
	defer noTimeout.Close()
	if b := ClientBudget(noTimeout); b != 0 {
		t.Fatalf("budget without a read timeout %s, want 0", b)
	}
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	long, cancelLong := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLong()
	cancelOnly, cancelIt := context.WithCancel(context.Background())
	defer cancelIt()
	for _, c := range []struct {
		name   string
		ctx    context.Context
		budget time.Duration
		want   bool
	}{
		{"no deadline", context.Background(), budget, false},
		{"cancel only", cancelOnly, budget, false},
		{"deadline first", short, budget, true},
		{"client first", long, budget, false},
		{"client unbounded", long, 0, true},
		{"cancel only, client unbounded", cancelOnly, 0, true},
		{"no deadline, client unbounded", context.Background(), 0, false},
	} {
		if got := Needed(c.ctx, c.budget); got != c.want {
			t.Errorf("%s: Needed = %v, want %v", c.name, got, c.want)
		}
	}
}
