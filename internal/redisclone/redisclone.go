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
// notifications). Each copy here gets a processor of its own, so a
// processor the caller set in the Options is not carried over.
package redisclone

import "github.com/redis/go-redis/v9"

// Client returns a new client with c's options changed by edit (nil: none).
// The caller closes it.
func Client(c *redis.Client, edit func(*redis.Options)) *redis.Client {
	opt := *c.Options()
	opt.PushNotificationProcessor = nil
	if opt.MaintNotificationsConfig != nil {
		mc := *opt.MaintNotificationsConfig
		opt.MaintNotificationsConfig = &mc
	}
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
	if opt.MaintNotificationsConfig != nil {
		mc := *opt.MaintNotificationsConfig
		opt.MaintNotificationsConfig = &mc
	}
	if edit != nil {
		edit(&opt)
	}
	return redis.NewClusterClient(&opt)
}
