//go:build cluster

package clustertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/clustertest"
)

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
	cliOut  []byte
)

// droverCLI builds the drover command once for the test binary.
func droverCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drover-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliBin = filepath.Join(dir, "drover")
		cliOut, cliErr = exec.Command("go", "build", "-o", cliBin, "github.com/seed40057009/drover/cmd/drover").CombinedOutput()
	})
	require.NoError(t, cliErr, "go build ./cmd/drover: %s", cliOut)
	return cliBin
}

// runCLI runs the drover command and returns its stdout; it fails the test
// when the command fails.
func runCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(droverCLI(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "drover %s: %s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.Bytes()
}

type cliQueue struct {
	Name   string `json:"name"`
	Paused bool   `json:"paused"`
	Counts struct {
		Waiting int64 `json:"waiting"`
	} `json:"counts"`
}

// TestCLIOnClusterAndSentinel: the CLI (and so `drover dashboard`, which
// connects the same way) works on a Redis Cluster given any one node's
// address, and through Sentinel given ?master_name=. It used to open a
// single-server client whatever --redis named: on a cluster it listed only
// the queues whose keys the named node holds and failed on the others with
// MOVED; Sentinel could not be named at all.
func TestCLIOnClusterAndSentinel(t *testing.T) {
	ctx := context.Background()
	t.Run("Cluster", func(t *testing.T) {
		c, rdb := clusterClient(t)
		prefix := testPrefix(t, rdb, false)
		_, tags, err := c.TagsByMaster(ctx, "cli", 1)
		require.NoError(t, err)
		var names []string
		for _, ts := range tags {
			name := "q{" + ts[0] + "}"
			names = append(names, name)
			q := newQueue(t, rdb, prefix, name)
			for range 3 {
				_, err := q.Add(ctx, "x", nil, nil)
				require.NoError(t, err)
			}
		}
		// Each node in turn: replicas too (they redirect like the others).
		for _, addr := range c.Addrs() {
			var got []cliQueue
			require.NoError(t, json.Unmarshal(runCLI(t, "queues", "--json", "--redis", "redis://"+addr, "--prefix", prefix), &got))
			byName := map[string]int64{}
			for _, q := range got {
				byName[q.Name] = q.Counts.Waiting
			}
			for _, name := range names {
				require.Equal(t, int64(3), byName[name], "queue %s listed through %s: %v", name, addr, got)
			}
		}
		addr := c.Addrs()[0]
		for _, name := range names {
			var pages []struct {
				Jobs []map[string]any `json:"jobs"`
			}
			require.NoError(t, json.Unmarshal(runCLI(t, "jobs", name, "--state", "waiting", "--json", "--redis", addr, "--prefix", prefix), &pages))
			require.Len(t, pages, 1)
			require.Len(t, pages[0].Jobs, 3, "jobs of %s through %s", name, addr)
		}
		runCLI(t, "pause", names[2], "--redis", addr, "--prefix", prefix)
		paused, err := newQueue(t, rdb, prefix, names[2]).IsPaused(ctx)
		require.NoError(t, err)
		require.True(t, paused)
	})
	t.Run("Sentinel", func(t *testing.T) {
		s := clustertest.SharedSentinel(t)
		rdb := s.NewFailoverClient(nil)
		t.Cleanup(func() { _ = rdb.Close() })
		prefix := clustertest.UniquePrefix()
		q, err := drover.NewQueue(rdb, "orders", &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		_, err = q.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		addrs := s.SentinelAddrs()
		url := "redis://" + addrs[0] + "/0?master_name=" + clustertest.MasterName + "&addr=" + addrs[1]
		var got []cliQueue
		require.NoError(t, json.Unmarshal(runCLI(t, "queues", "--json", "--redis", url, "--prefix", prefix), &got))
		require.Len(t, got, 1)
		require.Equal(t, "orders", got[0].Name)
		require.Equal(t, int64(1), got[0].Counts.Waiting)
	})
}
