//go:build lab

package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/lab"
)

// labWorkerCmd is `drover lab worker`: the worker process that `drover lab`
// starts (its own executable again) for the killed-after-effect scenario, and
// SIGKILLs once it wrote the effect. Not for people: it speaks the lab's
// stdin/stdout protocol (see lab.RunWorker).
type labWorkerCmd struct {
	out, errOut io.Writer
}

func (c *labWorkerCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("lab worker", flag.ContinueOnError)
	fs.SetOutput(c.errOut)
	redisURL := fs.String("redis", "", "Redis URL (required)")
	database := fs.String("database", "", "database DSN, as given to drover lab (required)")
	specText := fs.String("spec", "", "worker spec, JSON (required)")
	verbose := fs.Bool("v", false, "log to stderr")
	if err := parseFlags(fs, args); err != nil {
		return usagef("lab worker: %v", err)
	}
	if *redisURL == "" || *database == "" || *specText == "" {
		return usagef("lab worker: --redis, --database and --spec are required (this command is started by drover lab)")
	}
	spec, err := lab.DecodeWorkerSpec(*specText)
	if err != nil {
		return usagef("lab worker: %v", err)
	}
	opt, err := parseRedisURL(*redisURL)
	if err != nil {
		return usagef("lab worker: --redis: %v", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	db, _, closeDB, err := openLabDB(ctx, *database)
	if err != nil {
		return err
	}
	defer closeDB()

	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(c.errOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	err = lab.RunWorker(ctx, rdb, db.lab, spec, c.out, &lab.WorkerOptions{Stdin: os.Stdin, Logger: logger})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
