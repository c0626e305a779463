//go:build cluster

package clustertest_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// outboxRow is a drover_outbox row as the test checks it.
type outboxRow struct {
	Queue, JobID, LastError string
	Sent, Failed            bool
}

// TestOutboxRelayHashTags: a relay on a Redis Cluster serves every row whose
// queue drover can make there. Under a tagged prefix every queue name is
// fine; under an untagged prefix a row whose queue name carries the tag is
// relayed, and one without it, a queue no producer or worker can use on a
// cluster, is marked failed with the queue's own reason. NewRelay used to
// refuse an untagged prefix outright (its option check made a queue called
// "outbox", which has no tag), so tagged queue names could not be relayed
// at all.
func TestOutboxRelayHashTags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rdb := clusterClient(t)

	for _, c := range []struct {
		name   string
		tagged bool
	}{{"TaggedPrefix", true}, {"UntaggedPrefix", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "app.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			_, err = pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil)
			require.NoError(t, err)
			ob := outbox.NewSQLite(db)
			prefix := testPrefix(t, rdb, c.tagged)

			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, ob.AddTx(ctx, tx, "orders", "ship", map[string]int{"n": 1}, nil))
			require.NoError(t, ob.AddTx(ctx, tx, "{orders}", "ship", map[string]int{"n": 2}, nil))
			require.NoError(t, ob.AddTx(ctx, tx, "{payments}", "ship", map[string]int{"n": 3}, nil)) // another slot, same batch
			require.NoError(t, tx.Commit())

			relay, err := outbox.NewRelay(ob, rdb, &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{Prefix: prefix}})
			require.NoError(t, err)
			stats, err := relay.Flush(ctx)
			require.NoError(t, err)

			var rows []outboxRow
			rs, err := db.QueryContext(ctx, "SELECT queue, coalesce(job_id, ''), coalesce(last_error, ''), sent_at IS NOT NULL, failed_at IS NOT NULL FROM drover_outbox ORDER BY id")
			require.NoError(t, err)
			for rs.Next() {
				var r outboxRow
				require.NoError(t, rs.Scan(&r.Queue, &r.JobID, &r.LastError, &r.Sent, &r.Failed))
				rows = append(rows, r)
			}
			require.NoError(t, rs.Err())
			require.NoError(t, rs.Close())

			tagged := []outboxRow{{Queue: "{orders}", JobID: "outbox-2", Sent: true}, {Queue: "{payments}", JobID: "outbox-3", Sent: true}}
			if c.tagged {
				require.Equal(t, outbox.Stats{Created: 3}, stats)
				require.Equal(t, append([]outboxRow{{Queue: "orders", JobID: "outbox-1", Sent: true}}, tagged...), rows)
			} else {
				require.Equal(t, outbox.Stats{Created: 2, Failed: 1}, stats)
				require.Equal(t, []outboxRow{{Queue: "orders", Failed: true,
					LastError: `invalid option: queue "orders" with prefix "` + prefix + `" on a Redis Cluster: ` +
						`its keys would spread over many hash slots and its scripts would fail with CROSSSLOT; ` +
						`put a hash tag in the prefix (Prefix: "{` + prefix + `}") or in the queue name ("{orders}")`}, tagged[0], tagged[1]}, rows)
			}
			for _, name := range []string{"orders", "{orders}", "{payments}"} {
				if name == "orders" && !c.tagged {
					continue
				}
				job, err := newQueue(t, rdb, prefix, name).GetJob(ctx, map[string]string{"orders": "outbox-1", "{orders}": "outbox-2", "{payments}": "outbox-3"}[name])
				require.NoError(t, err, name)
				require.Equal(t, "ship", job.Name, name)
			}
		})
	}
}
