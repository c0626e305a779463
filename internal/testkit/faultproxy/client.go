package faultproxy

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// StartClient starts a Proxy to target and a go-redis client made with
// opts that reaches target through it (opts.Addr is the proxy's); both are
// closed when the test ends. It fails the test when the proxy cannot start.
func StartClient(t testing.TB, target string, opts redis.Options) (*Proxy, *redis.Client) {
	t.Helper()
	p, err := Start(target)
	if err != nil {
		t.Fatalf("start a fault proxy to %s: %v", target, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	opts.Addr = p.Addr
	rdb := redis.NewClient(&opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return p, rdb
}
