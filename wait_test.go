package drover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// waitResult is what one WaitUntilFinished call answered.
type waitResult struct {
	v   json.RawMessage
	err error
}

// waitAsync runs q.WaitUntilFinished(ctx, id) in a goroutine the test owns
// (it ends when the call returns; ctx bounds it).
func waitAsync(ctx context.Context, q *drover.Queue, id string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		v, err := q.WaitUntilFinished(ctx, id)
		ch <- waitResult{v, err}
	}()
	return ch
}

func TestWaitUntilFinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("CompletesWithValue", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "j", map[string]int{"n": 20}, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		got := waitAsync(ctx, b.queue, res.Job.ID)
		time.Sleep(50 * time.Millisecond) // let the call start listening first
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
			var in struct{ N int }
			if err := j.DecodeData(&in); err != nil {
				return nil, err
			}
			return map[string]int{"double": 2 * in.N}, nil
		}, nil)
		r := <-got
		require.NoError(t, r.err)
		require.JSONEq(t, `{"double":40}`, string(r.v))

		// Through the Job, and now answered from the hash.
		v, err := res.Job.WaitUntilFinished(ctx)
		require.NoError(t, err)
		require.JSONEq(t, `{"double":40}`, string(v))
	})

	t.Run("FailsWithReasonAfterRetries", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "j", nil, &drover.JobOptions{Attempts: 3})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		got := waitAsync(ctx, b.queue, res.Job.ID)
		time.Sleep(50 * time.Millisecond)
		var runs atomic.Int32
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
			return nil, fmt.Errorf("attempt %d broke", runs.Add(1))
		}, nil)
		r := <-got
		// A failed attempt that will be retried is not the end: the call
		// answers with the last attempt's failure.
		var fe *drover.JobFailedError
		require.ErrorAs(t, r.err, &fe)
		require.Equal(t, &drover.JobFailedError{Queue: b.name, JobID: res.Job.ID, Reason: "attempt 3 broke"}, fe)
		require.EqualValues(t, 3, runs.Load())
		require.Nil(t, r.v)

		_, err = b.queue.WaitUntilFinished(ctx, res.Job.ID) // from the hash
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "attempt 3 broke", fe.Reason)
	})

	// RemoveOnFail: the job is gone, its reason is in the failed event.
	t.Run("RemoveOnFail", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "j", nil, &drover.JobOptions{RemoveOnFail: &drover.Retention{Remove: true}})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		got := waitAsync(ctx, b.queue, res.Job.ID)
		time.Sleep(50 * time.Millisecond)
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
			return nil, errors.New("gone wrong")
		}, nil)
		r := <-got
		var fe *drover.JobFailedError
		require.ErrorAs(t, r.err, &fe)
		require.Equal(t, "gone wrong", fe.Reason)
	})

	t.Run("RetriedThenCompletes", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "j", nil, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		got := waitAsync(ctx, b.queue, res.Job.ID)
		time.Sleep(50 * time.Millisecond)
		var runs atomic.Int32
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
			if runs.Add(1) == 1 {
				return nil, errors.New("first try")
			}
			return "second", nil
		}, nil)
		r := <-got
		require.NoError(t, r.err)
		require.JSONEq(t, `"second"`, string(r.v))
	})

	t.Run("AlreadyFinished", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		ok, err := b.queue.Add(ctx, "ok", nil, nil)
		require.NoError(t, err)
		bad, err := b.queue.Add(ctx, "bad", nil, nil)
		require.NoError(t, err)
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
			if j.Name == "bad" {
				return nil, errors.New("no good")
			}
			return []int{1, 2}, nil
		}, nil)
		b.waitState(t, ok.Job.ID, drover.StateCompleted)
		b.waitState(t, bad.Job.ID, drover.StateFailed)
		// Nothing more will be written to the stream: an answer that came
		// from a read would take the whole ctx.
		ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		v, err := b.queue.WaitUntilFinished(ctx, ok.Job.ID)
		require.NoError(t, err)
		require.JSONEq(t, `[1,2]`, string(v))
		_, err = b.queue.WaitUntilFinished(ctx, bad.Job.ID)
		var fe *drover.JobFailedError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "no good", fe.Reason)
	})

	// The job finishes after the call looked at it and before its first
	// read: the read starts from the position taken before the look, so the
	// event is still seen.
	t.Run("FinishesBetweenCheckAndRead", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "j", nil, nil)
		require.NoError(t, err)
		release := make(chan struct{})
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
			<-release
			return "late", nil
		}, nil)
		b.waitState(t, res.Job.ID, drover.StateActive)
		var hooked atomic.Bool
		var finished time.Time
		drover.SetWaitHook(b.queue, func(stage string) {
			if stage == "checked" && hooked.CompareAndSwap(false, true) {
				close(release)
				b.waitState(t, res.Job.ID, drover.StateCompleted)
				finished = time.Now()
			}
		})
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		v, err := b.queue.WaitUntilFinished(ctx, res.Job.ID)
		require.NoError(t, err)
		require.JSONEq(t, `"late"`, string(v))
		require.True(t, hooked.Load())
		// From the event, not from the look after a quiet second of reading
		// (which would hide a lost wake-up).
		require.Less(t, time.Since(finished), 700*time.Millisecond)
	})

	// RemoveOnComplete: the job is gone, its value is in the event.
	t.Run("RemoveOnComplete", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		rm := &drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}}
		before, err := b.queue.Add(ctx, "before", nil, rm)
		require.NoError(t, err)
		kept, err := b.queue.Add(ctx, "kept", nil, &drover.JobOptions{JobID: "kept"})
		require.NoError(t, err)
		unrun, err := b.queue.Add(ctx, "unrun", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
		// This one finishes and is removed between the position and the
		// look at the job: the look finds no job, the event is after the
		// position.
		racing, err := b.queue.Add(ctx, "racing", nil, rm)
		require.NoError(t, err)
		releaseRacing := make(chan struct{})
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
			if j.Name == "racing" {
				<-releaseRacing
			}
			return map[string]string{"from": j.Name}, nil
		}, &drover.WorkerOptions{Concurrency: 2})

		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var hooked atomic.Bool // the hook stays set: the reader may still read it
		drover.SetWaitHook(b.queue, func(stage string) {
			if stage == "position" && hooked.CompareAndSwap(false, true) {
				close(releaseRacing)
				testkit.WaitFor(t, 10*time.Second, "racing job removed", func() bool {
					n, err := b.rdb.Exists(ctx, b.prefix+":q:"+racing.Job.ID).Result()
					require.NoError(t, err)
					return n == 0
				})
			}
		})
		v, err := b.queue.WaitUntilFinished(ctx, racing.Job.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"from":"racing"}`, string(v))

		// The other job finished before the call (its worker did not wait):
		// it is gone and its event is before the position, found by the
		// look back through the stream (BullMQ rejects: "Missing key").
		v, err = b.queue.WaitUntilFinished(ctx, before.Job.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"from":"before"}`, string(v))

		// A job removed by hand after its finish: its finish is still the
		// answer. One removed before it ran has none.
		b.waitState(t, kept.Job.ID, drover.StateCompleted)
		for _, j := range []*drover.Job{kept.Job, unrun.Job} {
			require.NoError(t, j.Remove(ctx, nil))
		}
		v, err = b.queue.WaitUntilFinished(ctx, kept.Job.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"from":"kept"}`, string(v))
		_, err = b.queue.WaitUntilFinished(ctx, unrun.Job.ID)
		require.ErrorIs(t, err, drover.ErrJobNotFound)

		// A finish of an earlier job with the same id is not this one's.
		again, err := b.queue.Add(ctx, "again", nil, &drover.JobOptions{JobID: kept.Job.ID, Delay: time.Hour})
		require.NoError(t, err)
		require.Equal(t, drover.AddCreated, again.Outcome)
		require.NoError(t, again.Job.Remove(ctx, nil))
		_, err = b.queue.WaitUntilFinished(ctx, kept.Job.ID)
		require.ErrorIs(t, err, drover.ErrJobNotFound)
	})

	t.Run("RemoveOnCompleteWhileWaiting", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "j", nil, &drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		got := waitAsync(ctx, b.queue, res.Job.ID)
		time.Sleep(50 * time.Millisecond)
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) { return 7, nil }, nil)
		r := <-got
		require.NoError(t, r.err)
		require.JSONEq(t, `7`, string(r.v))
	})

	t.Run("ContextDeadline", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "never", nil, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = res.Job.WaitUntilFinished(ctx)
		require.Equal(t, context.DeadlineExceeded, err)
		require.Less(t, time.Since(start), 900*time.Millisecond, "the deadline bounds the blocking read")
	})

	// Many jobs a fast worker finishes around the time the wait starts, half
	// of them removed on completion: every wait gets its own job's value.
	t.Run("ManyFastJobs", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
			return "v" + j.ID, nil
		}, &drover.WorkerOptions{Concurrency: 4})
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		errs := make(chan error, 4)
		for g := range 4 {
			go func() {
				for i := range 50 {
					var opts *drover.JobOptions
					if i%2 == 0 {
						opts = &drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}}
					}
					res, err := b.queue.Add(ctx, "j", nil, opts)
					if err != nil {
						errs <- err
						return
					}
					start := time.Now()
					v, err := b.queue.WaitUntilFinished(ctx, res.Job.ID)
					if err != nil {
						errs <- fmt.Errorf("goroutine %d job %s: %w", g, res.Job.ID, err)
						return
					}
					if want := `"v` + res.Job.ID + `"`; string(v) != want || time.Since(start) > 700*time.Millisecond {
						errs <- fmt.Errorf("job %s: got %s after %s, want %s from its event", res.Job.ID, v, time.Since(start), want)
						return
					}
				}
				errs <- nil
			}()
		}
		for range 4 {
			require.NoError(t, <-errs)
		}
	})

	// Many calls wait at once through a client with a pool of two
	// connections: they share one reader, so none starves for a connection.
	t.Run("ManyWaitersSmallPool", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		small := redis.NewClient(&redis.Options{Addr: b.rdb.Options().Addr, PoolSize: 2, PoolTimeout: 300 * time.Millisecond})
		defer small.Close()
		q, err := drover.NewQueue(small, b.name, &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		const n = 40
		ids := make([]string, n)
		for i := range ids {
			res, err := b.queue.Add(ctx, "j", nil, nil)
			require.NoError(t, err)
			ids[i] = res.Job.ID
		}
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		answers := make([]<-chan waitResult, n)
		for i, id := range ids {
			answers[i] = waitAsync(ctx, q, id)
		}
		time.Sleep(1500 * time.Millisecond) // every call waits (and looked at its job again)
		b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) { return j.ID, nil },
			&drover.WorkerOptions{Concurrency: 8})
		for i, ch := range answers {
			r := <-ch
			require.NoError(t, r.err)
			require.JSONEq(t, `"`+ids[i]+`"`, string(r.v))
		}
		require.NoError(t, q.Close())
	})

	t.Run("QueueClosed", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "never", nil, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		got := waitAsync(ctx, b.queue, res.Job.ID)
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, b.queue.Close())
		r := <-got
		require.ErrorIs(t, r.err, drover.ErrClosed)
		require.NoError(t, ctx.Err(), "ended by the close, not by ctx")
	})

	t.Run("MissingJob", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := b.queue.WaitUntilFinished(ctx, "nope")
		require.ErrorIs(t, err, drover.ErrJobNotFound)
		var je *drover.JobError
		require.ErrorAs(t, err, &je)
		require.Equal(t, "nope", je.JobID)

		_, err = (&drover.Job{ID: "1"}).WaitUntilFinished(ctx)
		require.ErrorIs(t, err, drover.ErrNoQueue)
		require.NoError(t, b.queue.Close())
		_, err = b.queue.WaitUntilFinished(ctx, "nope")
		require.ErrorIs(t, err, drover.ErrClosed)
	})

	// The job's event is trimmed away (tiny maxLenEvents, many other
	// events) between the call's look at the job and its read: the look
	// after a quiet read finds the job finished.
	t.Run("TrimmedEvent", func(t *testing.T) {
		t.Parallel()
		for _, remove := range []bool{false, true} {
			t.Run(fmt.Sprintf("remove=%v", remove), func(t *testing.T) {
				t.Parallel()
				b := setupQueue(t)
				// A tiny events cap, as a Node Queue opened with
				// streams.events.maxLen 5 writes it.
				require.NoError(t, b.rdb.HSet(ctx, b.prefix+":q:meta", "opts.maxLenEvents", 5).Err())
				var opts *drover.JobOptions
				if remove {
					opts = &drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}}
				}
				res, err := b.queue.Add(ctx, "target", nil, opts)
				require.NoError(t, err)
				release := make(chan struct{})
				b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
					if j.Name == "target" {
						<-release
						return "kept", nil
					}
					return nil, nil
				}, nil)
				b.waitState(t, res.Job.ID, drover.StateActive)
				var hooked atomic.Bool
				flooded := make(chan struct{})
				drover.SetWaitHook(b.queue, func(stage string) {
					if stage == "read" {
						<-flooded // the reader reads after the trim
						return
					}
					if stage != "checked" || !hooked.CompareAndSwap(false, true) {
						return
					}
					defer close(flooded)
					close(release)
					testkit.WaitFor(t, 10*time.Second, "target finished", func() bool {
						n, err := b.rdb.ZCard(ctx, b.prefix+":q:completed").Result()
						require.NoError(t, err)
						ex, err := b.rdb.Exists(ctx, b.prefix+":q:"+res.Job.ID).Result()
						require.NoError(t, err)
						return n == 1 || (remove && ex == 0)
					})
					// Flood the stream until the target's event is trimmed.
					testkit.WaitFor(t, 10*time.Second, "target's event trimmed", func() bool {
						bulk := make([]drover.BulkJob, 100)
						for i := range bulk {
							bulk[i] = drover.BulkJob{Name: "flood"}
						}
						_, err := b.queue.AddBulk(ctx, bulk)
						require.NoError(t, err)
						for _, ev := range b.events(t) {
							if ev.JobID == res.Job.ID && ev.Name == drover.EventCompleted {
								return false
							}
						}
						return true
					})
				})
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				v, err := b.queue.WaitUntilFinished(ctx, res.Job.ID)
				require.True(t, hooked.Load())
				if remove {
					// Gone, and its event with it: nothing says how it ended.
					require.ErrorIs(t, err, drover.ErrJobNotFound)
					return
				}
				require.NoError(t, err)
				require.JSONEq(t, `"kept"`, string(v))
			})
		}
	})

	// Redis stops answering the waiting call's client for a few looks at
	// the job (its connections reset, new ones refused), and the job
	// completes meanwhile through another client: once the network is back
	// the call answers with the value instead of having ended with the
	// outage's error. With the outage still on at ctx's end, the error
	// matches the deadline and names the Redis error.
	t.Run("RidesOutAnOutage", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		proxy, viaProxy := faultproxy.StartClient(t, redistest.Shared(t).Addr, redis.Options{MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		q, err := drover.NewQueue(viaProxy, b.name, &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		t.Cleanup(func() { _ = q.Close() })
		var outages atomic.Int32
		drover.SetWaitHook(q, func(stage string) {
			if stage == "outage" {
				outages.Add(1)
			}
		})
		res, err := b.queue.Add(ctx, "j", nil, nil)
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		got := waitAsync(wctx, q, res.Job.ID)
		time.Sleep(100 * time.Millisecond) // the call is waiting
		proxy.Refuse()
		proxy.ResetAll()
		// The call looks at its job a second after its last look ended:
		// two and a half seconds of outage hold at least one failed look
		// (a failing dial takes a while of its own).
		time.Sleep(2500 * time.Millisecond)
		select {
		case r := <-got:
			t.Fatalf("the wait ended during the outage: %q, %v", r.v, r.err)
		default:
		}
		require.Positive(t, outages.Load(), "a look at the job failed during the outage")
		b.startWorker(t, func(context.Context, *drover.Job) (any, error) { return "after the outage", nil }, nil)
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		require.NoError(t, proxy.Listen())
		r := <-got
		require.NoError(t, r.err)
		require.JSONEq(t, `"after the outage"`, string(r.v))

		// The outage outlasts ctx: the deadline, with the Redis error.
		unfinished, err := b.queue.Add(ctx, "never", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		got = waitAsync(dctx, q, unfinished.Job.ID)
		time.Sleep(100 * time.Millisecond)
		before := outages.Load()
		proxy.Refuse()
		proxy.ResetAll()
		r = <-got
		require.ErrorIs(t, r.err, context.DeadlineExceeded)
		require.Greater(t, outages.Load(), before, "looks failed before the deadline")
		require.ErrorContains(t, r.err, "Redis was failing")
		var je *drover.JobError
		require.ErrorAs(t, r.err, &je)
		require.Equal(t, unfinished.Job.ID, je.JobID)
	})
}
