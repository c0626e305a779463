package metricset_test

import (
	"os"
	"testing"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestMain stops the shared redis-server after the tests: without it each
// run of this package left one behind.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
