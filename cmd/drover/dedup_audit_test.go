package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestDedupReleaseAuditSaysWhetherItFreedTheID: `drover dedup --release`
// recorded the same audit entry (action, queue, dedup id, outcome ok)
// whether it freed the id or found it free, so the log could not answer
// "who freed this id". The entry's detail now says released=true or false.
func TestDedupReleaseAuditSaysWhetherItFreedTheID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "once", nil, &drover.JobOptions{JobID: "o1", Deduplication: &drover.Deduplication{ID: "op-1"}})
	require.NoError(t, err)
	for range 2 {
		var out bytes.Buffer
		require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"dedup", "mail", "op-1", "--release",
			"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}), out.String())
	}
	entries, err := rdb.XRange(ctx, keys.DashboardOf(prefix).AuditLog(), "-", "+").Result()
	require.NoError(t, err)
	var details []string
	for _, e := range entries {
		for _, v := range e.Values {
			if s, ok := v.(string); ok && strings.Contains(s, `"release-dedup"`) {
				details = append(details, s)
			}
		}
	}
	require.Len(t, details, 2)
	require.Contains(t, details[0], `released=true`, "the first release freed the id")
	require.Contains(t, details[1], `released=false`, "the second found it free")
}
