package drover_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWakeKeyChildProcess is not a test on its own: TestKilledWorkerWakeKey
// runs the test binary again with DROVER_WAKE_CHILD set, and this function
// then becomes a worker process (concurrency 1, LockDuration 1s) that
// fails job "fail" into its backoff (a wake-up for its fetcher) and hangs
// in job "hang" until it is killed; it prints its worker id first.
func TestWakeKeyChildProcess(t *testing.T) {
	addr := os.Getenv("DROVER_WAKE_CHILD")
	if addr == "" {
		return
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "fail" {
			return nil, errors.New("later")
		}
		fmt.Printf("started %s\n", job.Name)
		select {} // hang: only SIGKILL ends this process
	}), &drover.WorkerOptions{Prefix: os.Getenv("DROVER_WAKE_PREFIX"), LockDuration: time.Second})
	require.NoError(t, err)
	fmt.Printf("worker %s\n", w.ID())
	require.NoError(t, w.Start(context.Background()))
	select {}
}

// TestKilledWorkerWakeKey: a worker busy with a job holds a wake-up in its
// wake key (<queue>:marker:<worker id>: a failure into backoff wrote it
// after the same finish call took the next job, so its fetcher is not
// waiting). While the worker lives, its lock renewals keep the key alive
// past its lifetime (5s: 2 × LockDuration, at least 5s); once the process
// is SIGKILLed, the key expires. Before, the key had no TTL: every killed
// worker process left one key forever.
func TestKilledWorkerWakeKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	_, err := b.queue.Add(ctx, "fail", nil, &drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}})
	require.NoError(t, err)
	_, err = b.queue.Add(ctx, "hang", nil, nil)
	require.NoError(t, err)

	cmd := exec.Command(os.Args[0], "-test.run=^TestWakeKeyChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DROVER_WAKE_CHILD="+redistest.Shared(t).Addr, "DROVER_WAKE_PREFIX="+b.prefix)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	id, ok := strings.CutPrefix(strings.TrimSpace(line), "worker ")
	require.True(t, ok, line)
	line, err = r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "started hang", strings.TrimSpace(line))
	key := b.prefix + ":q:marker:" + id
	testkit.WaitFor(t, 5*time.Second, "the wake-up of the failure into backoff", func() bool {
		n, err := b.rdb.Exists(ctx, key).Result()
		require.NoError(t, err)
		return n == 1
	})

	// Alive and busy: the key outlives its lifetime, renewed.
	time.Sleep(6 * time.Second)
	ttl, err := b.rdb.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.Positive(t, ttl, "a live worker's wake key has a lifetime (-1: none, -2: gone)")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	killed = true
	testkit.WaitFor(t, 8*time.Second, "the killed worker's wake key to expire", func() bool {
		n, err := b.rdb.Exists(ctx, key).Result()
		require.NoError(t, err)
		return n == 0
	})
}
