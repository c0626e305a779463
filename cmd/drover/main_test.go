package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestMain(m *testing.M) {
	// `drover lab` starts its own executable again as the worker process
	// (`lab worker ...`); in these tests that executable is this test
	// binary, which then is drover. The tests run it as `lab ...` too, to
	// see the exit code, as `cancel ...` to cancel from another process, and
	// as `retry ...` to interrupt a long retry.
	// With DROVER_TEST_MAIN=1 it is drover whatever the command.
	if len(os.Args) > 1 && (os.Args[1] == "lab" || os.Args[1] == "demo" || os.Args[1] == "cancel" || os.Args[1] == "retry" ||
		os.Getenv("DROVER_TEST_MAIN") == "1") {
		main()
		os.Exit(0)
	}
	code := redistest.Main(m)
	pgtest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
