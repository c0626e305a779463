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
)

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
	m := Main{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin}
	err := m.Run(ctx, os.Args[1:])
	stop()
	var usage *usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "drover:", escapeControls(err.Error()))
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "drover:", escapeControls(err.Error()))
		os.Exit(1)
	}
}
