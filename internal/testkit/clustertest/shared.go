package clustertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	clusterOnce sync.Once
	cluster     *Cluster
	clusterErr  error

	sentinelOnce sync.Once
	sentinel     *Sentinel
	sentinelErr  error

	prefixSeq atomic.Int64
)

// Main runs the package's tests and then stops the shared cluster and
// sentinel set-up, if they were started. Call it from TestMain:
// os.Exit(clustertest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
	}
	if sentinel != nil {
		sentinel.Stop()
	}
	return code
}

// SharedCluster returns the test binary's cluster of 3 masters with one
// replica each, starting it on first use and waiting until it is healthy. A failure to start fails the test
// (with install instructions when a binary is missing): tests never skip.
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	clusterOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cluster, clusterErr = StartCluster(ctx, 3, 1)
	})
	if clusterErr != nil {
		tb.Fatalf("clustertest: start cluster: %v", clusterErr)
	}
	// Every test starts on a healthy cluster, even when the one before broke
	// nodes or a starved node was failed over while it ran.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := cluster.WaitHealthy(ctx); err != nil {
		tb.Fatalf("clustertest: shared cluster: %v", err)
	}
	return cluster
}

// SharedSentinel returns the test binary's sentinel set-up, starting it on
// first use.
func SharedSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	sentinelOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		sentinel, sentinelErr = StartSentinel(ctx)
	})
	if sentinelErr != nil {
		tb.Fatalf("clustertest: start sentinel: %v", sentinelErr)
	}
	return sentinel
}

// UniquePrefix returns a key prefix (without a hash tag) not used before by
// this process.
func UniquePrefix() string {
	return fmt.Sprintf("c%d-%d", os.Getpid()%100000, prefixSeq.Add(1))
}
