package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestAddSaysWhyNotAdded: an add that wrote nothing said "not added:
// duplicate of job dup1 (waiting)" and "not added: deduplicated of job 6
// (waiting)", the outcome's code name; it now says what holds the id.
func TestAddSaysWhyNotAdded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, prefix := redistest.Client(t)
	run := func(args ...string) string {
		out, err := runCLI(ctx, t, prefix, args...)
		require.NoError(t, err, out)
		return out
	}
	require.Equal(t, "added job dup1 to mail\n", run("add", "mail", "x", "--opts", `{"jobId":"dup1"}`))
	require.Equal(t, "not added: job dup1 already exists (waiting)\n", run("add", "mail", "x", "--opts", `{"jobId":"dup1"}`))
	out := run("add", "mail", "x", "--opts", `{"deduplication":{"id":"d1"}}`)
	var id string
	_, err := fmt.Sscanf(out, "added job %s to mail\n", &id)
	require.NoError(t, err, out)
	require.Equal(t, "not added: job "+id+" (waiting) holds deduplication id \"d1\"\n", run("add", "mail", "x", "--opts", `{"deduplication":{"id":"d1"}}`))
}
