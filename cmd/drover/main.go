// Command drover runs the drover demo, the failure lab, the dashboard and
// the queue inspection and admin commands. `drover help` lists them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// quietLogger drops go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// A second signal forces the exit.
		<-ctx.Done()
		stop()
		force := make(chan os.Signal, 1)
		signal.Notify(force, os.Interrupt, syscall.SIGTERM)
		<-force
		fmt.Fprintln(os.Stderr, "drover: second signal, exiting now")
		os.Exit(130)
	}()
	// go-redis logs every failed dial; drover reports the error once.
	redis.SetLogger(quietLogger{})
	m := Main{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin}
	err := m.Run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "drover:", escapeControls(err.Error()))
	}
	os.Exit(exitCode(err))
}

// exitCode is the exit status of a command that returned err, as
// exitStatusHelp tells it: 0 done, 2 a usage error, 1 any other error.
func exitCode(err error) int {
	var usage *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		return 2
	default:
		return 1
	}
}
