package scripts

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
)

// limitWindow (ms) is the rate-limit window of the finish-path
// equivalence tests' limited cases. Each compares two queues' limiter keys,
// which expire this long (real time) after each call counted in them: a
// second's window let queue a's key expire while queue b's, set a moment
// later, was still there when a loaded machine paused the test between
// the two calls for a second ("q:limiter: only in b").
const limitWindow = 600_000

// finishRig builds the states the finish-path equivalence tests
// (TestFinishSingleMatchesBatch, TestFinishStraightBatchMatchesBatch)
// start from: jobs added a second before now, taken half a second before.
type finishRig struct {
	rdb redis.UniversalClient
	now int64 // ms
}

// add adds recs to k, a record without a name as job "j" with empty data
// and options.
func (r finishRig) add(t *testing.T, k keys.Queue, recs ...AddRecord) {
	t.Helper()
	for i := range recs {
		if recs[i].Name == "" {
			recs[i].Name, recs[i].Data, recs[i].Opts = "j", "{}", "{}"
		}
		recs[i].Timestamp = r.now - 1000
	}
	_, err := AddJobs(context.Background(), r.rdb, k, Call{}, recs)
	require.NoError(t, err)
}

// take moves n jobs of k to active under token "t", failing unless it
// took n.
func (r finishRig) take(t *testing.T, k keys.Queue, n int) {
	t.Helper()
	f, err := MoveToActive(context.Background(), r.rdb, k, FetchArgs{Now: r.now - 500, Count: n, Token: "t", LockDuration: 30000, WorkerName: "w"})
	require.NoError(t, err)
	require.Len(t, f.Jobs, n)
}

// do sends each raw command, failing on an error.
func (r finishRig) do(t *testing.T, cmds ...[]any) {
	t.Helper()
	for _, c := range cmds {
		require.NoError(t, r.rdb.Do(context.Background(), c...).Err(), "%v", c)
	}
}
