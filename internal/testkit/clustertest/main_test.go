//go:build cluster

package clustertest_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/seed40057009/drover/internal/testkit/clustertest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := clustertest.Main(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("time.Sleep")); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
