package topology

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestShouldReload(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "Nil", err: nil, want: false},
		{name: "RedisNil", err: redis.Nil, want: false},
		{name: "Cancelled", err: fmt.Errorf("fetch: %w", context.Canceled), want: false},
		{name: "DeadlineExceeded", err: context.DeadlineExceeded, want: true},
		{name: "ConnectionLost", err: io.EOF, want: true},
		{name: "DialRefused", err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ShouldReload(tt.err))
		})
	}
}

func TestWatchAddsTheHookOnce(t *testing.T) {
	t.Parallel()

	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer func() { _ = c.Close() }()
	Watch(c)
	Watch(c)
	n := 0
	watched.Range(func(k, _ any) bool {
		if k == c {
			n++
		}
		return true
	})
	require.Equal(t, 1, n)
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer func() { _ = single.Close() }()
	Watch(single) // not a cluster client: left alone
	_, isWatched := watched.Load(single)
	require.False(t, isWatched)
}
