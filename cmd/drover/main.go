// Command drover runs the drover demo, the failure lab, the dashboard and
// the queue inspection and admin commands. `drover help` lists them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// quietLogger drops go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var first atomic.Pointer[os.Signal]
	go func() {
		s := <-sigs
		first.Store(&s)
		cancel(fmt.Errorf("%s signal received", s))
		// A second signal forces the exit.
		<-sigs
		fmt.Fprintln(os.Stderr, "drover: second signal, exiting now")
		os.Exit(130)
	}()
	// go-redis logs every failed dial; drover reports the error once.
	redis.SetLogger(quietLogger{})
	m := Main{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin}
	err := m.Run(ctx, os.Args[1:])
	signal.Stop(sigs)
	code := exitCode(err)
	if s := first.Load(); s != nil && code == 1 {
		// A command stopped by Ctrl-C (or SIGTERM) before it finished said
		// only "... context canceled" and exited 1, as if it had failed;
		// shells and scripts know 128+signal.
		err = fmt.Errorf("interrupted (%s) before it finished: %w", *s, err)
		code = interruptedCode(*s)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "drover:", escapeControls(err.Error()))
	}
	os.Exit(code)
}

// interruptedCode is the exit status of a command stopped by s before it
// finished: 128 plus the signal's number, as shells report it (130 for
// Ctrl-C, 143 for SIGTERM).
func interruptedCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
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
