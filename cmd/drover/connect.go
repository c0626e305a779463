package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// redisFlags are the --redis and --prefix flags every queue command takes.
type redisFlags struct {
	url    string
	prefix string
}

// RedisURLDefault is where the queue commands look for Redis when neither
// --redis nor DROVER_REDIS_URL says.
const RedisURLDefault = "redis://127.0.0.1:6379/0"

func (r *redisFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.url, "redis", envOr("DROVER_REDIS_URL", RedisURLDefault), "Redis URL, redis://[user:pass@]host:port/db (env DROVER_REDIS_URL)")
	fs.StringVar(&r.prefix, "prefix", envOr("DROVER_PREFIX", drover.PrefixDefault), "key prefix of the queues (env DROVER_PREFIX)")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// inspector connects to Redis and returns an Inspector and a func that
// closes the connection.
func (r *redisFlags) inspector(ctx context.Context) (*inspect.Inspector, func(), error) {
	opt, err := redis.ParseURL(r.url)
	if err != nil {
		return nil, nil, usagef("--redis %q: %v", r.url, err)
	}
	rdb := redis.NewClient(opt)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: r.prefix})
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	if err := ins.Ping(ctx); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("cannot reach Redis at %s: %w", opt.Addr, err)
	}
	return ins, func() {
		_ = ins.Close(context.WithoutCancel(ctx))
		_ = rdb.Close()
	}, nil
}

// parseArgs parses flags anywhere among the arguments (`drover jobs mail
// --state failed` as well as `drover jobs --state failed mail`) and returns
// the positional ones. Everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
