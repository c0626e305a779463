// Package redisclone opens a second go-redis client like an existing one
// (same address, credentials, TLS and timeouts) with a few settings
// changed: a worker's named connection, the dashboard's stream pool.
//
// Copying a client's Options as they are is not enough: go-redis stores
// the push-notification processor it made for the first client in those
// Options, and a second client given the same processor fails to register
// its handlers on it and logs "failed to initialize maintnotifications"
// once per client it opens (RESP3, go-redis' default protocol, while the
// first client has not yet found that the server offers no maintenance
// notifications). Each copy here gets a processor of its own (a processor
// the caller set is not carried over), and runs without maintenance
// notifications: the copies are side connections (a name for the worker
// list, live-update streams) that reconnect after a failover like any
// connection, and with them on, go-redis would start goroutines per copy
// that only Close stops.
package redisclone

import (
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Client returns a new client with c's options changed by edit (nil: none).
// The caller closes it.
func Client(c *redis.Client, edit func(*redis.Options)) *redis.Client {
	opt := *c.Options()
	opt.PushNotificationProcessor = nil
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if edit != nil {
		edit(&opt)
	}
	return redis.NewClient(&opt)
}

// Cluster returns a new cluster client with c's options changed by edit
// (nil: none). The caller closes it.
func Cluster(c *redis.ClusterClient, edit func(*redis.ClusterOptions)) *redis.ClusterClient {
	opt := *c.Options()
	opt.PushNotificationProcessor = nil
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if edit != nil {
		edit(&opt)
	}
	return redis.NewClusterClient(&opt)
}
