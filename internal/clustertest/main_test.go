//go:build cluster

package clustertest_test

import (
	"os"
	"testing"

	"github.com/seed40057009/drover/internal/clustertest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(clustertest.Main(m))
}
