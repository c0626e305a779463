// Package topology makes a Redis Cluster client follow a failover for every
// command drover sends through it: scripts, plain reads, pipelines, admin
// calls alike.
//
// go-redis reloads a cluster client's slot map when a node answers MOVED,
// but a crashed master answers nothing: after its replica is elected, the
// client keeps sending that shard's commands to the dead address until its
// periodic reload (ClusterOptions.ClusterStateReloadInterval, 60s by
// default). Watch adds go-redis hooks that ask for a reload:
//
//   - on every node client go-redis creates afterwards, as soon as a dial
//     fails. go-redis retries a refused dial 5 times 100 ms apart and a
//     command up to 4 times, so a command to a dead master takes about 2 s
//     to fail; a caller whose deadline is shorter never saw the connection
//     error, and before this hook its client kept the dead address until
//     the periodic reload;
//   - on the cluster client, after a command or pipeline fails with anything
//     but a Redis reply or a cancelled context (a node client created
//     before Watch has no dial hook; a stopped master accepts connections
//     and times out instead of refusing them).
//
// ReloadState is asynchronous and debounced by go-redis (one CLUSTER SLOTS
// at a time, 200 ms apart), so a burst of errors costs one reload.
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
	c.OnNewNode(func(node *redis.Client) { node.AddHook(dialHook{c: c}) })
}

// ShouldReload reports whether err may say the node could not be reached:
// any error but an answer from Redis or a cancelled context. A deadline
// counts: the retries of a command to a dead node can outlast it.
func ShouldReload(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
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

// dialHook asks the cluster client for a new slot map when one of its node
// clients fails to connect.
type dialHook struct{ c *redis.ClusterClient }

func (h dialHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil && !errors.Is(err, context.Canceled) {
			h.c.ReloadState(context.WithoutCancel(ctx))
		}
		return conn, err
	}
}

func (dialHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
