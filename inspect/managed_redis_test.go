package inspect_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// refusedScans reads how many SCAN calls the server refused (INFO
// commandstats rejected_calls, ACL refusals among them).
func refusedScans(t *testing.T, admin *redis.Client) int {
	t.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_scan:"); ok {
			for f := range strings.SplitSeq(rest, ",") {
				if v, ok := strings.CutPrefix(f, "rejected_calls="); ok {
					n, err := strconv.Atoi(v)
					require.NoError(t, err)
					return n
				}
			}
		}
	}
	return 0
}

// TestInspectorOnAManagedRedis: on a managed Redis (CONFIG renamed away, a
// user without @dangerous and without SCAN) the dashboard's and the CLI's
// Inspector lists the queues drover registered (Queues, Overview, FindJob),
// warns once that a queue only Node producers write cannot be found, does
// not send SCAN on every discovery round, and obliterates a queue. Queues,
// Overview and FindJob failed with the NOPERM of SCAN (an empty dashboard),
// and Obliterate failed half-way (the script's SCAN for its add-call keys
// was refused after it had deleted the jobs).
func TestInspectorOnAManagedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--rename-command", "CONFIG", "")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-@dangerous", "-scan").Err())
	app := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "app", Password: "pw"})
	t.Cleanup(func() { _ = app.Close() })

	// A short-lived process (the CLI) lists before the queue exists: its
	// listing without SCAN must not stand, for the next process, for a
	// scan's (a published list hid the queue for two intervals).
	early, err := inspect.New(app, &inspect.Options{Prefix: "bull", DiscoveryInterval: time.Minute})
	require.NoError(t, err)
	none, err := early.Queues(ctx)
	require.NoError(t, err)
	require.Empty(t, none)
	require.NoError(t, early.Close(ctx))

	q, err := drover.NewQueue(app, "mail", nil)
	require.NoError(t, err)
	r, err := q.Add(ctx, "send", nil, nil)
	require.NoError(t, err)
	_, err = q.Add(ctx, "send", nil, nil)
	require.NoError(t, err)

	var logs testkit.SyncBuffer
	ins, err := inspect.New(app, &inspect.Options{Prefix: "bull", DiscoveryInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(context.Background()) })

	names, err := ins.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"mail"}, names)
	ov, err := ins.Overview(ctx)
	require.NoError(t, err)
	require.Len(t, ov, 1)
	found, err := ins.FindJob(ctx, r.Job.ID)
	require.NoError(t, err)
	require.NotEmpty(t, found)
	_, err = ins.Rescan(ctx)
	require.ErrorContains(t, err, "scan", "Rescan needs SCAN: its error names it")

	// Some discovery rounds: none may send SCAN again.
	for range 10 {
		time.Sleep(60 * time.Millisecond)
		_, err := ins.Queues(ctx)
		require.NoError(t, err)
	}
	require.LessOrEqual(t, refusedScans(t, admin), 3, "SCAN sent again after its refusal (each Inspector's first listing, and Rescan)")
	require.Equal(t, 1, strings.Count(logs.String(), "Redis refuses SCAN"), logs.String())

	require.NoError(t, ins.Pause(ctx, "mail"))
	require.NoError(t, ins.Obliterate(ctx, "mail", true))
	left, err := admin.Keys(ctx, "bull:mail:*").Result()
	require.NoError(t, err)
	for _, k := range left {
		require.Truef(t, strings.HasPrefix(k, "bull:mail:add:"), "obliterate left %s", k)
	}
}
