package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestRelayOneJobPerRowAsABullMQConsumerSeesIt checks the package's promise
// end to end, with a Node BullMQ 6.7.0 worker as the consumer: rows
// committed while two relays (each with a pool of its own, through a fault
// proxy) have their connections cut mid-batch and PostgreSQL crashes and
// restarts all become sent, and the Node worker completes exactly one job
// per row, the row's job, each once.
func TestRelayOneJobPerRowAsABullMQConsumerSeesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("a PostgreSQL server of its own and a Node worker")
	}
	ctx := context.Background()
	srv := pgtest.Own(t)
	dsn, err := srv.CreateDB(ctx, "consumer")
	require.NoError(t, err)
	producer := pgtest.Connect(t, dsn)
	_, err = pgmigrate.Up(ctx, pgmigrate.Postgres(producer), nil)
	require.NoError(t, err)
	ob := outbox.NewPostgres(producer)

	rdb, prefix := redistest.Client(t)
	const queue = "orders"
	oracle := bullmqoracle.Start(t, rdb.Options().Addr)
	require.NoError(t, oracle.StartWorker(ctx, prefix, queue, bullmqoracle.WorkerOptions{
		ID: "consumer", Concurrency: 4, Behavior: bullmqoracle.Return(nil),
	}))

	logs := &testkit.SyncBuffer{}
	var proxies []*faultproxy.Proxy
	for range 2 {
		proxy, pool := pgtest.ConnectThroughProxy(t, dsn)
		proxies = append(proxies, proxy)
		relay, err := outbox.NewRelay(outbox.NewPostgres(pool), rdb, &outbox.RelayOptions{
			QueueOptions: &drover.QueueOptions{Prefix: prefix},
			BatchSize:    7, PollInterval: 50 * time.Millisecond,
			MinRetryDelay: 20 * time.Millisecond, MaxRetryDelay: 200 * time.Millisecond,
			BatchTimeout: 3 * time.Second,
			Logger:       slog.New(slog.NewTextHandler(logs, nil)),
		})
		require.NoError(t, err)
		require.NoError(t, relay.Start(ctx))
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			require.NoError(t, relay.Close(cctx))
		})
	}

	// Producers: 300 rows, one transaction each, retried while the server
	// is down (a retried commit whose answer was lost may leave a second
	// row: the check goes by row, not by payload).
	const rows = 300
	var wg sync.WaitGroup
	for p := range 3 {
		wg.Go(func() {
			for i := range rows / 3 {
				for {
					err := pgx.BeginFunc(ctx, producer, func(tx pgx.Tx) error {
						return ob.AddTx(ctx, tx, queue, "order", map[string]any{"order": fmt.Sprintf("%d-%d", p, i)}, nil)
					})
					if err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	// Faults while they write and the relays relay: connections reset;
	// the answer to a batch's marks lost (after its adds: the rows are
	// relayed again, as duplicates), the answer to its COMMIT lost (read
	// back); pgx sends a statement's text on a connection's first use, so
	// each loss of marks follows a reset.
	time.Sleep(400 * time.Millisecond)
	for round := range 4 {
		p := proxies[round%2]
		p.ResetAll()
		if round < 2 {
			p.DropReplyTo("sent_at = $3")
		} else {
			p.DropReplyTo("commit")
		}
		time.Sleep(300 * time.Millisecond)
	}
	srv.Crash()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, srv.Start())
	time.Sleep(300 * time.Millisecond)
	proxies[0].ResetAll()
	proxies[1].ResetAll()
	wg.Wait()

	// Every row is sent, none failed.
	type rowJob struct {
		id    int64
		jobID *string
		sent  bool
	}
	var all []rowJob
	require.Eventually(t, func() bool {
		rs, err := producer.Query(ctx, "SELECT id, job_id, sent_at IS NOT NULL FROM drover_outbox WHERE failed_at IS NULL ORDER BY id")
		if err != nil {
			return false
		}
		all, err = pgx.CollectRows(rs, func(r pgx.CollectableRow) (rowJob, error) {
			var j rowJob
			return j, r.Scan(&j.id, &j.jobID, &j.sent)
		})
		if err != nil {
			return false
		}
		for _, r := range all {
			if !r.sent {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "every row sent")
	var failed int
	require.NoError(t, producer.QueryRow(ctx, "SELECT count(*) FROM drover_outbox WHERE failed_at IS NOT NULL").Scan(&failed))
	require.Zero(t, failed)
	require.GreaterOrEqual(t, len(all), rows)

	// The Node worker completes one job per row, each once.
	want := map[string]bool{}
	for _, r := range all {
		require.NotNil(t, r.jobID)
		require.Equal(t, outboxJobID(r.id), *r.jobID)
		want[*r.jobID] = true
	}
	var events []bullmqoracle.WorkerEvent
	require.Eventually(t, func() bool {
		events, err = oracle.WorkerEvents(ctx, "consumer")
		require.NoError(t, err)
		n := 0
		for _, e := range events {
			if e.Event == "completed" {
				n++
			}
		}
		return n >= len(all)
	}, 60*time.Second, 200*time.Millisecond, "the Node worker completes every row's job")
	time.Sleep(300 * time.Millisecond) // a duplicate job would be picked up by now
	events, err = oracle.WorkerEvents(ctx, "consumer")
	require.NoError(t, err)
	completed, active := map[string]int{}, map[string]int{}
	for _, e := range events {
		switch e.Event {
		case "completed":
			completed[e.JobID]++
		case "active":
			active[e.JobID]++
		}
	}
	for id := range want {
		require.Equal(t, 1, completed[id], "job %s completed once", id)
		require.Equal(t, 1, active[id], "job %s run once", id)
	}
	require.Len(t, completed, len(want), "no job but the rows'")
	q, err := drover.NewQueue(rdb, queue, &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	counts, err := q.GetJobCounts(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(want), counts[drover.StateCompleted])
	failedBatches := strings.Count(logs.String(), `msg="outbox batch failed; retrying"`)
	require.Positive(t, failedBatches, "the faults hit the relays")
	dups := regexp.MustCompile(`msg="outbox batch relayed" count=\d+ created=\d+ duplicates=([1-9]\d*)`).FindAllString(logs.String(), -1)
	t.Logf("%d rows, %d jobs completed once each; %d failed batches, %d batches re-adding rows as duplicates",
		len(all), len(completed), failedBatches, len(dups))
}
