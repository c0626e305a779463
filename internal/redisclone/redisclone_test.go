package redisclone_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/redisclone"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// lines records what go-redis logs.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, fmt.Sprintf(format, v...))
}

func (l *lines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.all {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// TestCopiesLogNothing: a copy of a client used on RESP3 (go-redis'
// default) works and makes go-redis log nothing. A copy of the Options as
// they were (a worker's named connection, the dashboard's stream pool, the
// demo's stalling worker) logged "failed to initialize maintnotifications:
// ... cannot overwrite existing handler" once per client opened.
func TestCopiesLogNothing(t *testing.T) {
	// go-redis' logger is a process-wide variable: not parallel.
	log := &lines{}
	redis.SetLogger(log)
	t.Cleanup(func() { redis.SetLogger(&lines{}) })
	ctx := context.Background()
	srv := redistest.Shared(t)
	// Copied before the first client connected: once it has, go-redis
	// turns the (default) "auto" mode off in its Options when the server
	// does not offer maintenance notifications, and a copy made then
	// inherits "disabled".
	base := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { base.Close() })

	for i := range 3 {
		c := redisclone.Client(base, func(o *redis.Options) { o.ClientName = fmt.Sprintf("copy-%d", i); o.PoolSize = 1 })
		require.NoError(t, c.Ping(ctx).Err())
		name, err := c.ClientGetName(ctx).Result()
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("copy-%d", i), name)
		require.NoError(t, c.Close())
	}
	require.NoError(t, base.Ping(ctx).Err())
	require.Empty(t, log.matching("maintnotifications"))
	require.Empty(t, base.Options().ClientName, "the original's options are not changed")

	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}})
	t.Cleanup(func() { cl.Close() })
	cc := redisclone.Cluster(cl, func(o *redis.ClusterOptions) { o.PoolSize = 2 })
	require.Equal(t, 2, cc.Options().PoolSize)
	require.NotEqual(t, 2, cl.Options().PoolSize)
	require.NoError(t, cc.Close())
}
