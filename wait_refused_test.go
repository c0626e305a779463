package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWaitEndsOnRefusal: while WaitUntilFinished waits, Redis starts to
// refuse its looks for a reason that asking again will not change: an ACL
// takes the keys away (NOPERM), the password changes (WRONGPASS on the
// next connection), or the job's key holds another type (WRONGTYPE). The
// wait must end at once with that error, not ride it out as an outage
// until its context ends. QueueEvents.Run ends too. Before, each wait
// returned only at its 20 s deadline, with "context deadline exceeded".
func TestWaitEndsOnRefusal(t *testing.T) {
	t.Parallel()
	srv := redistest.Pausable(t) // a server of its own: the test changes its ACLs
	admin := srv.Client(t)
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		refuse func(t *testing.T, user, jobID string)
		want   string
	}{
		{"NOPERM", func(t *testing.T, user, _ string) {
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", user, "resetkeys", "~other:*").Err())
		}, "NOPERM"},
		{"WRONGPASS", func(t *testing.T, user, _ string) {
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", user, "resetpass", ">changed").Err())
			require.NoError(t, admin.Do(ctx, "CLIENT", "KILL", "USER", user).Err())
		}, "WRONGPASS"},
		{"WRONGTYPE", func(t *testing.T, _, jobID string) {
			require.NoError(t, admin.Del(ctx, "bull:"+jobID).Err())
			require.NoError(t, admin.Set(ctx, "bull:"+jobID, "not a hash", 0).Err())
		}, "WRONGTYPE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := "app-" + tc.name
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", user, "on", ">secret", "~*", "&*", "+@all").Err())
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: user, Password: "secret",
				ReadTimeout: 15 * time.Second, MaxRetries: -1})
			t.Cleanup(func() { _ = rdb.Close() })
			queue := "q-" + tc.name
			q, err := drover.NewQueue(rdb, queue, nil)
			require.NoError(t, err)
			added, err := q.Add(ctx, "x", nil, nil)
			require.NoError(t, err)

			waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			waited := make(chan error, 1)
			go func() { _, err := q.WaitUntilFinished(waitCtx, added.Job.ID); waited <- err }()
			var eventsErr chan error
			if tc.name == "NOPERM" {
				qe, err := drover.NewQueueEvents(rdb, queue, nil)
				require.NoError(t, err)
				eventsErr = make(chan error, 1)
				go func() { eventsErr <- qe.Run(waitCtx, func(drover.Event) error { return nil }) }()
			}
			time.Sleep(1500 * time.Millisecond) // the wait has looked at the job
			tc.refuse(t, user, queue+":"+added.Job.ID)

			select {
			case err := <-waited:
				require.ErrorContains(t, err, tc.want)
				require.NotErrorIs(t, err, context.DeadlineExceeded)
			case <-time.After(10 * time.Second):
				t.Fatalf("WaitUntilFinished rode out a %s refusal as an outage", tc.want)
			}
			if eventsErr != nil {
				select {
				case err := <-eventsErr:
					require.ErrorContains(t, err, tc.want)
				case <-time.After(10 * time.Second):
					t.Fatalf("QueueEvents.Run rode out a %s refusal as an outage", tc.want)
				}
			}
		})
	}
}
