package droverotel_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestMain(m *testing.M) {
	code := redistest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
