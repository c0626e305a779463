// Package topology makes a Redis Cluster client follow a failover for every
// command drover sends through it: scripts, plain reads, pipelines, admin
// calls alike.
//
// go-redis reloads a cluster client's slot map when a node answers MOVED,
// but a crashed master answers nothing: after its replica is elected, the
// client keeps sending that shard's commands to the dead address until its
// periodic reload (ClusterOptions.ClusterStateReloadInterval, 60s by
// default). Watch adds a go-redis hook that asks for a reload after any
// connection-level error (not a Redis reply, not a cancelled context).
// ReloadState is asynchronous and debounced by go-redis.
package topology

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

// watched holds the cluster clients that already carry the hook, so a
// client shared by many queues gets it once.
var watched sync.Map // *redis.ClusterClient -> struct{}

// Watch adds the reload hook to rdb if it is a Redis Cluster client and
// does not carry it yet. Other clients need none (a failover client follows
// Sentinel by itself) and are left as they are.
func Watch(rdb redis.UniversalClient) {
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return
	}
	if _, loaded := watched.LoadOrStore(c, struct{}{}); loaded {
		return
	}
	c.AddHook(hook{c: c})
}

// ShouldReload reports whether err says the node could not be reached (as
// opposed to an answer from Redis or the caller giving up).
func ShouldReload(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}

type hook struct{ c *redis.ClusterClient }

// reload asks for a new slot map after err. The reload outlives the
// command that failed, so it is detached from its cancellation.
func (h hook) reload(ctx context.Context, err error) {
	if ShouldReload(err) {
		h.c.ReloadState(context.WithoutCancel(ctx))
	}
}

func (h hook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.reload(ctx, err)
		return err
	}
}

func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.reload(ctx, err)
		return err
	}
}
