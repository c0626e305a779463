package drover_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/queuecheck"
)

// readQueueStates reads where each job of a quiet queue is and checks the
// invariants a fault must not break (queuecheck): it fails the test on a
// violation.
func readQueueStates(t *testing.T, rdb *redis.Client, prefix, name string) *queuecheck.States {
	t.Helper()
	ctx := context.Background()
	s, err := queuecheck.Read(ctx, rdb, prefix, name)
	require.NoError(t, err)
	v, err := s.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v, "queue %s's invariants", name)
	return s
}
