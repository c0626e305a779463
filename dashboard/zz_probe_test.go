package dashboard_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

func TestProbeHugeDryRun(t *testing.T) {
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	k := b.prefix + ":big:"
	const n = 100000
	for from := 0; from < n; from += 5000 {
		p := b.rdb.Pipeline()
		for i := from; i < from+5000; i++ {
			id := strconv.Itoa(i + 1)
			p.HSet(ctx, k+id, "name", []string{"a", "b"}[i%2], "data", "{}", "opts", `{"attempts":2}`,
				"timestamp", 1000+i, "atm", 2, "ats", 2, "failedReason", "boom "+id, "finishedOn", 2000+i)
			p.ZAdd(ctx, k+"failed", redisZ(float64(2000+i), id))
		}
		_, err := p.Exec(ctx)
		require.NoError(t, err)
	}
	require.NoError(t, b.rdb.HSet(ctx, k+"meta", "opts.maxLenEvents", 10000).Err())
	c := b.as(t, "")
	for _, f := range []string{"", "name=a"} {
		start := time.Now()
		var res map[string]any
		st := c.post("api/queues/big/retry", dashboard.RetryJobsRequest{Filter: f, DryRun: true}, &res)
		t.Logf("filter %q: status %d in %s: matched %v body %.200s", f, st, time.Since(start), res["matched"], c.lastBody)
	}
	start := time.Now()
	var fr map[string]any
	st := c.get("api/queues/big/failures", &fr)
	t.Logf("failures: %d in %s scanned %v", st, time.Since(start), fr["scanned"])
}
