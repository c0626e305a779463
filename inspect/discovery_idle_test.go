package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/inspect"
)

// TestQueuesAfterIdlingIsCurrent: the first listing of an Inspector that
// idled (a dashboard nobody looked at for a while: its discovery loop
// rests) lists the queues drover created meanwhile and not the ones
// removed. It answered from the cache as it was when the loop went to
// rest, minutes or hours old, and only the next listing was current: the
// overview opened in the morning showed the evening's queues.
func TestQueuesAfterIdlingIsCurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	const interval = 20 * time.Millisecond
	dash, err := inspect.New(b.rdb, &inspect.Options{Prefix: b.prefix, DiscoveryInterval: interval})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dash.Close(ctx)) })
	b.add(t, "old", "x", nil)
	b.add(t, "doomed", "x", nil)
	names, err := dash.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"doomed", "old"}, names)

	// Nobody lists for many rounds: the loop rests (10 rounds idle).
	time.Sleep(30 * interval)
	b.add(t, "fresh", "x", nil) // a drover producer registers its queue
	q, err := dash.Queue("doomed")
	require.NoError(t, err)
	require.NoError(t, q.Obliterate(ctx, nil))
	time.Sleep(5 * interval)

	names, err = dash.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"fresh", "old"}, names, "the first listing after idling")
}
