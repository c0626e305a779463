package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFirstBuildLeavesOutHeavyPackages keeps the first `go run ./cmd/drover
// demo` quick (README, "First run"): without the lab tag the command
// compiles neither client_golang and protobuf (the dashboard serves
// /metrics through internal/metricset) nor the SQL drivers the lab uses.
func TestFirstBuildLeavesOutHeavyPackages(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command lists the packages drover compiles")
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/seed40057009/drover/dashboard", "the listing is of the drover command")
	for _, dep := range deps {
		for _, heavy := range []string{"github.com/prometheus/", "google.golang.org/protobuf/", "modernc.org/", "github.com/jackc/pgx", "go.opentelemetry.io/"} {
			require.False(t, strings.HasPrefix(dep, heavy), "the drover command compiles %s", dep)
		}
	}
}
