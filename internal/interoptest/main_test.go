package interoptest_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(soakWorkerEnv); spec != "" {
		os.Exit(runSoakWorker(spec))
	}
	code := redistest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
