package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestRedisFlag: --redis takes a URL or a bare host:port (as redis-cli and
// most clients do; it was refused: "first path segment in URL cannot
// contain colon"); anything else is refused naming both forms.
func TestRedisFlag(t *testing.T) {
	t.Parallel()
	addr := redistest.Shared(t).Addr
	_, prefix := redistest.Client(t)
	for _, tc := range []struct {
		redis, err string
	}{
		{redis: addr},
		{redis: "redis://" + addr + "/0"},
		{redis: "localhost", err: `--redis "localhost": want a redis:// or rediss:// URL, or host:port`},
		{redis: "http://" + addr, err: `invalid URL scheme`},
	} {
		var out bytes.Buffer
		m := Main{Stdout: &out, Stderr: &out}
		err := m.Run(context.Background(), []string{"queues", "--redis", tc.redis, "--prefix", prefix})
		if tc.err == "" {
			require.NoError(t, err, tc.redis)
			continue
		}
		require.ErrorContains(t, err, tc.err, tc.redis)
	}
}
