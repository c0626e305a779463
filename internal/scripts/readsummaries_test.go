package scripts

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// pieces are the texts random messages are made of: what makes cutting
// JSON text and finding its last entry hard (quotes, backslashes, the
// separators themselves inside a message, escapes, multi-byte UTF-8).
var pieces = []string{"a", "error", " ", `"`, `\`, `","`, `\",`, `{"v":2,"n":9,`, `{"n":`, `"}]`, "é", "日本", "🙂", "<&>", "\n", "\u2028", "\t", ","}

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestReadSummariesCutsLongFields holds readSummaries.lua to what its
// callers decode: for random stack trace lists and attempt timelines, some
// shorter than the cut and some far longer, a short one comes as stored; a
// long list comes as a valid JSON list of one trace that starts the last
// one; a long timeline as its last attempt with that attempt's number,
// outcome and unrecoverable mark. A long failed reason comes cut on a
// UTF-8 boundary, with its whole length.
func TestReadSummariesCutsLongFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	k := keys.New(prefix, "q")
	const cut = 300
	r := rand.New(rand.NewPCG(7, 11))
	fields := []string{"name", "failedReason", "stacktrace", "drover.attempts"}
	type attempt struct {
		V             int    `json:"v,omitempty"`
		N             int    `json:"n"`
		Start         string `json:"start"`
		Outcome       string `json:"outcome"`
		Error         string `json:"error,omitempty"`
		Worker        string `json:"worker,omitempty"`
		Unrecoverable bool   `json:"unrecoverable,omitempty"`
	}
	for round := range 300 {
		size := []int{10, cut / 2, cut, 3 * cut, 40 * cut}[round%5]
		var traces []string
		for range 1 + r.IntN(4) {
			traces = append(traces, randomText(r, r.IntN(size+1)))
		}
		var tl []attempt
		for n := range 1 + r.IntN(4) {
			a := attempt{V: 2 * r.IntN(2), N: n + 1, Start: "2026-12-06T10:00:00Z", Outcome: []string{"failed", "retry", "f!"}[r.IntN(3)],
				Error: randomText(r, r.IntN(size+1)), Worker: randomText(r, r.IntN(20))}
			a.Unrecoverable = a.V == 0 && r.IntN(2) == 0
			tl = append(tl, a)
		}
		st, err := json.Marshal(traces)
		require.NoError(t, err)
		tj, err := json.Marshal(tl)
		require.NoError(t, err)
		if r.IntN(2) == 0 { // BullMQ's JSON.stringify escapes no HTML
			st = []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(st)))
		}
		reason := randomText(r, size)
		id := "j" + string(rune('a'+round%26)) + strings.Repeat("x", round/26)
		require.NoError(t, rdb.HSet(ctx, k.Job(id), "name", "n", "failedReason", reason, "stacktrace", st, "drover.attempts", tj).Err())

		got, err := ReadSummaries(ctx, rdb, k, SummaryCut{Reason: cut, Trace: cut}, fields, []string{id, "missing"})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, []any{nil, nil, nil, nil}, got[1].Values, "no hash")

		g := got[0]
		require.Equal(t, "n", g.Values[0])
		require.EqualValues(t, len(reason), g.ReasonLen)
		gr := g.Values[1].(string)
		require.True(t, strings.HasPrefix(reason, gr) && utf8.ValidString(gr), "round %d: reason cut on a rune", round)
		require.LessOrEqual(t, len(gr), cut)
		if len(reason) <= cut {
			require.Equal(t, reason, gr)
		} else {
			require.Greater(t, len(gr), cut-4)
		}

		gs := g.Values[2].(string)
		if len(st) <= cut {
			require.Equal(t, string(st), gs, "round %d: a short list comes whole", round)
		} else {
			var one []string
			require.NoError(t, json.Unmarshal([]byte(gs), &one), "round %d: %s", round, gs)
			require.Len(t, one, 1)
			last := traces[len(traces)-1]
			require.True(t, strings.HasPrefix(last, one[0]), "round %d: %q does not start %q", round, one[0], last)
			require.True(t, one[0] == last || len(gs) > cut-10, "round %d: cut short: %s", round, gs)
		}

		gt := g.Values[3].(string)
		if len(tj) <= cut {
			require.Equal(t, string(tj), gt)
		} else {
			var one []attempt
			require.NoError(t, json.Unmarshal([]byte(gt), &one), "round %d: %s", round, gt)
			require.Len(t, one, 1)
			last := tl[len(tl)-1]
			require.Equal(t, last.N, one[0].N)
			require.Equal(t, last.Outcome, one[0].Outcome)
			require.Equal(t, last.Unrecoverable, one[0].Unrecoverable, "round %d: %s", round, gt)
		}
	}
}

// TestReadSummariesWholeReasonAndScore: with "whole" the reason comes as
// stored, and the delayed-set score comes when asked for.
func TestReadSummariesWholeReasonAndScore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	k := keys.New(prefix, "q")
	reason := strings.Repeat("é", 1000)
	require.NoError(t, rdb.HSet(ctx, k.Job("1"), "failedReason", reason).Err())
	require.NoError(t, rdb.ZAdd(ctx, k.Delayed(), redis.Z{Score: 4096, Member: "1"}).Err())
	got, err := ReadSummaries(ctx, rdb, k, SummaryCut{Reason: 100, WholeReason: true, Trace: 100, Score: true}, []string{"failedReason"}, []string{"1", "2"})
	require.NoError(t, err)
	require.Equal(t, reason, got[0].Values[0])
	require.Equal(t, "4096", got[0].Score)
	require.Empty(t, got[1].Score)
}
