package statedump_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

func TestMain(m *testing.M) {
	code := redistest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func snap(keys map[string]*statedump.Key) *statedump.Snapshot {
	return &statedump.Snapshot{Prefix: "p", Keys: keys}
}

func TestNormalize(t *testing.T) {
	t.Parallel()

	const ts = "1796023760708"

	tests := []struct {
		name string
		opts *statedump.NormalizeOptions
		in   map[string]*statedump.Key
		want map[string]*statedump.Key
	}{
		{
			name: "JobHashTimestampsAndCanonicalJSON",
			in: map[string]*statedump.Key{"q:1": {Type: statedump.TypeHash, Hash: map[string]string{
				"name":         "n",
				"timestamp":    ts,
				"processedOn":  "1796023760800",
				"delay":        "1500",
				"priority":     "0",
				"atm":          "1",
				"opts":         `{"timestamp":1796023760708,"jobId":"x\/y","attempts":3,"big":1.2345678901235e+17}`,
				"data":         `{"b":1, "a":"<&>"}`,
				"failedReason": "plain / text",
			}}},
			want: map[string]*statedump.Key{"q:1": {Type: statedump.TypeHash, Hash: map[string]string{
				"name":         "n",
				"timestamp":    "<ts>",
				"processedOn":  "<ts>",
				"delay":        "1500",
				"priority":     "0",
				"atm":          "1",
				"opts":         `{"attempts":3,"big":1.2345678901235e+17,"jobId":"x/y","timestamp":"<ts>"}`,
				"data":         `{"a":"<&>","b":1}`,
				"failedReason": "plain / text",
			}}},
		},
		{
			name: "KeepJSONAndTimestamps",
			opts: &statedump.NormalizeOptions{KeepJSON: true, KeepTimestamps: true},
			in: map[string]*statedump.Key{"q:1": {Type: statedump.TypeHash, Hash: map[string]string{
				"timestamp": ts, "opts": `{"b":1,"a":"x\/y"}`,
			}}},
			want: map[string]*statedump.Key{"q:1": {Type: statedump.TypeHash, Hash: map[string]string{
				"timestamp": ts, "opts": `{"b":1,"a":"x\/y"}`,
			}}},
		},
		{
			name: "CustomTimestampWindow",
			opts: &statedump.NormalizeOptions{TimestampMin: 100, TimestampMax: 200},
			in: map[string]*statedump.Key{"q:1": {Type: statedump.TypeHash, Hash: map[string]string{
				"a": "150", "b": ts, "c": "99",
			}}},
			want: map[string]*statedump.Key{"q:1": {Type: statedump.TypeHash, Hash: map[string]string{
				"a": "<ts>", "b": ts, "c": "99",
			}}},
		},
		{
			name: "ZSetScores",
			in: map[string]*statedump.Key{
				"q:completed":   {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "1", Score: ts}, {Member: "2", Score: "1796023760999"}}},
				"q:prioritized": {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "3", Score: "4294967298"}, {Member: "4", Score: "9999999999999"}}},
				"q:delayed":     {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "5", Score: "7356513323859968"}}},
				"q:marker":      {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "0", Score: "0"}, {Member: "1", Score: "1796023760708.25"}}},
			},
			want: map[string]*statedump.Key{
				"q:completed":   {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "1", Score: "<ts>"}, {Member: "2", Score: "<ts>"}}},
				"q:prioritized": {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "3", Score: "4294967298"}, {Member: "4", Score: "9999999999999"}}},
				"q:delayed":     {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "5", Score: "<ts>"}}},
				"q:marker":      {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "0", Score: "0"}, {Member: "1", Score: "<ts>"}}},
			},
		},
		{
			name: "DelayedScoresOrder",
			opts: &statedump.NormalizeOptions{DelayedScores: statedump.ScoreOrder},
			in: map[string]*statedump.Key{"q:delayed": {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{
				{Member: "a", Score: "7356513323859968"},
				{Member: "b", Score: "7356513323859969"},
				{Member: "c", Score: "7356513323864064"},
			}}},
			want: map[string]*statedump.Key{"q:delayed": {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{
				{Member: "a", Score: "<due#0>"},
				{Member: "b", Score: "<due#0>"},
				{Member: "c", Score: "<due#1>"},
			}}},
		},
		{
			name: "DelayedScoresKeep",
			opts: &statedump.NormalizeOptions{DelayedScores: statedump.ScoreKeep},
			in: map[string]*statedump.Key{"q:delayed": {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{
				{Member: "a", Score: "7356513323859968"},
			}}},
			want: map[string]*statedump.Key{"q:delayed": {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{
				{Member: "a", Score: "7356513323859968"},
			}}},
		},
		{
			name: "StreamIDsAndFields",
			in: map[string]*statedump.Key{"q:events": {Type: statedump.TypeStream, Stream: []statedump.StreamEntry{
				{ID: "1796023760708-0", Fields: []string{"event", "delayed", "jobId", "1", "delay", "1796023762208"}},
				{ID: "1796023760709-0", Fields: []string{"event", "completed", "jobId", "1", "returnvalue", `{"z":1,"a":"p/q"}`, "prev", "active"}},
			}}},
			want: map[string]*statedump.Key{"q:events": {Type: statedump.TypeStream, Stream: []statedump.StreamEntry{
				{ID: "<id>", Fields: []string{"event", "delayed", "jobId", "1", "delay", "<ts>"}},
				{ID: "<id>", Fields: []string{"event", "completed", "jobId", "1", "returnvalue", `{"a":"p/q","z":1}`, "prev", "active"}},
			}}},
		},
		{
			name: "KeepStreamIDs",
			opts: &statedump.NormalizeOptions{KeepStreamIDs: true},
			in: map[string]*statedump.Key{"q:events": {Type: statedump.TypeStream, Stream: []statedump.StreamEntry{
				{ID: "1-0", Fields: []string{"event", "paused"}},
			}}},
			want: map[string]*statedump.Key{"q:events": {Type: statedump.TypeStream, Stream: []statedump.StreamEntry{
				{ID: "1-0", Fields: []string{"event", "paused"}},
			}}},
		},
		{
			name: "LockTokenMetaVersionPrefixUUID",
			in: map[string]*statedump.Key{
				"q:1:lock": {Type: statedump.TypeString, TTL: true, String: "5d1c7a7e-3f7e-4a34-9a43-2f1b1f0c9c11:1"},
				"q:meta":   {Type: statedump.TypeHash, Hash: map[string]string{"version": "bullmq:6.7.0", "opts.maxLenEvents": "10000"}},
				"q:2":      {Type: statedump.TypeHash, Hash: map[string]string{"parentKey": "p:parent:0337cb1c-1111-2222-3333-444455556666"}},
				"parent:0337cb1c-1111-2222-3333-444455556666:dependencies": {Type: statedump.TypeSet, Set: []string{"p:q:2"}},
			},
			want: map[string]*statedump.Key{
				"q:1:lock":                   {Type: statedump.TypeString, TTL: true, String: "<token>"},
				"q:meta":                     {Type: statedump.TypeHash, Hash: map[string]string{"version": "<version>", "opts.maxLenEvents": "10000"}},
				"q:2":                        {Type: statedump.TypeHash, Hash: map[string]string{"parentKey": "<prefix>:parent:<uuid>"}},
				"parent:<uuid>:dependencies": {Type: statedump.TypeSet, Set: []string{"<prefix>:q:2"}},
			},
		},
		{
			name: "KeepEverything",
			opts: &statedump.NormalizeOptions{
				KeepTimestamps: true, KeepStreamIDs: true, KeepLockTokens: true, KeepMetaVersion: true,
				KeepJSON: true, KeepPrefix: true, KeepUUIDs: true, DelayedScores: statedump.ScoreKeep,
			},
			in: map[string]*statedump.Key{
				"q:1:lock": {Type: statedump.TypeString, String: "tok"},
				"q:meta":   {Type: statedump.TypeHash, Hash: map[string]string{"version": "bullmq:6.7.0"}},
				"q:2":      {Type: statedump.TypeHash, Hash: map[string]string{"parentKey": "p:parent:0337cb1c-1111-2222-3333-444455556666", "timestamp": ts}},
			},
			want: map[string]*statedump.Key{
				"q:1:lock": {Type: statedump.TypeString, String: "tok"},
				"q:meta":   {Type: statedump.TypeHash, Hash: map[string]string{"version": "bullmq:6.7.0"}},
				"q:2":      {Type: statedump.TypeHash, Hash: map[string]string{"parentKey": "p:parent:0337cb1c-1111-2222-3333-444455556666", "timestamp": ts}},
			},
		},
		{
			name: "UUIDKeyCollision",
			in: map[string]*statedump.Key{
				"q:0337cb1c-1111-2222-3333-444455556666": {Type: statedump.TypeString, String: "a"},
				"q:9999cb1c-1111-2222-3333-444455556666": {Type: statedump.TypeString, String: "b"},
			},
			want: map[string]*statedump.Key{
				"q:<uuid>":   {Type: statedump.TypeString, String: "a"},
				"q:<uuid>#2": {Type: statedump.TypeString, String: "b"},
			},
		},
		{
			name: "MaskAndDrop",
			opts: &statedump.NormalizeOptions{MaskHashFields: []string{"stacktrace"}, DropKeys: []string{"*:events", "q:stalled-check"}},
			in: map[string]*statedump.Key{
				"q:1":             {Type: statedump.TypeHash, Hash: map[string]string{"stacktrace": `["Error: x\n at f (/a.js:1:2)"]`, "atm": "1"}},
				"q:events":        {Type: statedump.TypeStream},
				"q:stalled-check": {Type: statedump.TypeString, String: ts},
				"q:wait":          {Type: statedump.TypeList, List: []string{"2", "1"}},
			},
			want: map[string]*statedump.Key{
				"q:1":    {Type: statedump.TypeHash, Hash: map[string]string{"stacktrace": "<masked>", "atm": "1"}},
				"q:wait": {Type: statedump.TypeList, List: []string{"2", "1"}},
			},
		},
		{
			name: "ListsAreNotTimestamped",
			in: map[string]*statedump.Key{
				"q:1:logs": {Type: statedump.TypeList, List: []string{ts, "p:q:1"}},
			},
			want: map[string]*statedump.Key{
				"q:1:logs": {Type: statedump.TypeList, List: []string{ts, "<prefix>:q:1"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			in := snap(tt.in)
			before := in.Clone()
			got, err := statedump.Normalize(in, tt.opts)
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Keys)
			require.Equal(t, before, in, "Normalize must not modify its input")
		})
	}
}

func TestNormalizeBadPattern(t *testing.T) {
	t.Parallel()

	_, err := statedump.Normalize(snap(map[string]*statedump.Key{"q:a": {Type: statedump.TypeString}}),
		&statedump.NormalizeOptions{DropKeys: []string{"["}})
	require.ErrorContains(t, err, `DropKeys pattern "["`)
}

func TestDiff(t *testing.T) {
	t.Parallel()

	base := func() map[string]*statedump.Key {
		return map[string]*statedump.Key{
			"q:str":    {Type: statedump.TypeString, String: "v"},
			"q:list":   {Type: statedump.TypeList, List: []string{"3", "2", "1"}},
			"q:set":    {Type: statedump.TypeSet, Set: []string{"a", "b"}},
			"q:zset":   {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "1", Score: "1"}, {Member: "2", Score: "2"}}},
			"q:hash":   {Type: statedump.TypeHash, Hash: map[string]string{"f": "1", "g": "2"}},
			"q:stream": {Type: statedump.TypeStream, Stream: []statedump.StreamEntry{{ID: "<id>", Fields: []string{"event", "added", "jobId", "1"}}}},
		}
	}

	tests := []struct {
		name   string
		change func(k map[string]*statedump.Key)
		want   []string
	}{
		{name: "Equal", change: func(map[string]*statedump.Key) {}, want: nil},
		{
			name: "KeyOnlyInOne",
			change: func(k map[string]*statedump.Key) {
				delete(k, "q:set")
				k["q:new"] = &statedump.Key{Type: statedump.TypeString}
			},
			want: []string{"q:new: only in b (string)", "q:set: only in a (set)"},
		},
		{
			name: "TypeAndTTL",
			change: func(k map[string]*statedump.Key) {
				k["q:str"] = &statedump.Key{Type: statedump.TypeList}
				k["q:hash"].TTL = true
			},
			want: []string{"q:hash: ttl false in a, true in b", "q:str: type string in a, list in b"},
		},
		{
			name:   "StringValue",
			change: func(k map[string]*statedump.Key) { k["q:str"].String = "w" },
			want:   []string{`q:str: a="v" b="w"`},
		},
		{
			name:   "ListOrderAndLength",
			change: func(k map[string]*statedump.Key) { k["q:list"].List = []string{"2", "3", "1", "0"} },
			want: []string{
				"q:list: list length 3 in a, 4 in b",
				`q:list: [0] a="3" b="2"`,
				`q:list: [1] a="2" b="3"`,
				`q:list: [3] only in b: "0"`,
			},
		},
		{
			name:   "SetMembers",
			change: func(k map[string]*statedump.Key) { k["q:set"].Set = []string{"b", "c"} },
			want:   []string{`q:set: member "a" only in a`, `q:set: member "c" only in b`},
		},
		{
			name:   "ZSetScore",
			change: func(k map[string]*statedump.Key) { k["q:zset"].ZSet[1].Score = "3" },
			want:   []string{`q:zset: [1] a="2"@2 b="2"@3`},
		},
		{
			name: "HashFields",
			change: func(k map[string]*statedump.Key) {
				k["q:hash"].Hash = map[string]string{"f": "9", "h": "3"}
			},
			want: []string{
				`q:hash: field f: a="1" b="9"`,
				`q:hash: field g only in a ("2")`,
				`q:hash: field h only in b ("3")`,
			},
		},
		{
			name: "StreamEntries",
			change: func(k map[string]*statedump.Key) {
				k["q:stream"].Stream = append(k["q:stream"].Stream, statedump.StreamEntry{ID: "<id>", Fields: []string{"event", "waiting", "jobId", "1"}})
			},
			want: []string{
				"q:stream: stream length 1 in a, 2 in b",
				`q:stream: [1] only in b: <id> event="waiting" jobId="1"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			a := snap(base())
			bk := base()
			tt.change(bk)
			b := &statedump.Snapshot{Prefix: "other", Keys: bk}
			require.Equal(t, tt.want, statedump.Diff(a, b))
		})
	}
}

func TestDump(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		rdb    *redis.Client
		prefix string
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		rdb, prefix := redistest.Client(t)
		return &testBundle{rdb: rdb, prefix: prefix}
	}

	t.Run("EveryType", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		ctx := context.Background()
		rdb, p := bundle.rdb, bundle.prefix
		require.NoError(t, rdb.Set(ctx, p+":q:1:lock", "token-1", time.Minute).Err())
		require.NoError(t, rdb.Set(ctx, p+":q:id", "7", 0).Err())
		require.NoError(t, rdb.LPush(ctx, p+":q:wait", "1", "2", "3").Err())
		require.NoError(t, rdb.SAdd(ctx, p+":q:stalled", "b", "a", "c").Err())
		require.NoError(t, rdb.ZAdd(ctx, p+":q:delayed",
			redis.Z{Score: 7356513323859969, Member: "5"},
			redis.Z{Score: 7356513323859968, Member: "4"}).Err())
		require.NoError(t, rdb.ZAdd(ctx, p+":q:marker", redis.Z{Score: 1796023760708.25, Member: "1"}).Err())
		require.NoError(t, rdb.HSet(ctx, p+":q:1", "name", "n", "data", `{"a":1}`).Err())
		require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: p + ":q:events", ID: "1-1", Values: []any{"event", "added", "jobId", "1", "name", "n"}}).Err())
		require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: p + ":q:events", ID: "2-0", Values: []any{"event", "paused"}}).Err())
		// Keys of another prefix that starts the same are not included.
		require.NoError(t, rdb.Set(ctx, p+"x:q:id", "1", 0).Err())
		t.Cleanup(func() { rdb.Del(context.Background(), p+"x:q:id") })

		s, err := statedump.Dump(ctx, rdb, p)
		require.NoError(t, err)
		require.Equal(t, p, s.Prefix)
		require.Equal(t, map[string]*statedump.Key{
			"q:1:lock":  {Type: statedump.TypeString, TTL: true, String: "token-1"},
			"q:id":      {Type: statedump.TypeString, String: "7"},
			"q:wait":    {Type: statedump.TypeList, List: []string{"3", "2", "1"}},
			"q:stalled": {Type: statedump.TypeSet, Set: []string{"a", "b", "c"}},
			"q:delayed": {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{
				{Member: "4", Score: "7356513323859968"}, {Member: "5", Score: "7356513323859969"},
			}},
			"q:marker": {Type: statedump.TypeZSet, ZSet: []statedump.ZMember{{Member: "1", Score: "1796023760708.25"}}},
			"q:1":      {Type: statedump.TypeHash, Hash: map[string]string{"name": "n", "data": `{"a":1}`}},
			"q:events": {Type: statedump.TypeStream, Stream: []statedump.StreamEntry{
				{ID: "1-1", Fields: []string{"event", "added", "jobId", "1", "name", "n"}},
				{ID: "2-0", Fields: []string{"event", "paused"}},
			}},
		}, s.Keys)
		require.Equal(t, []string{"q:1", "q:1:lock", "q:delayed", "q:events", "q:id", "q:marker", "q:stalled", "q:wait"}, s.Names())

		text := s.String()
		require.Contains(t, text, "q:1:lock string (ttl) = \"token-1\"")
		require.Contains(t, text, "    1-1 event=\"added\" jobId=\"1\" name=\"n\"")
		t.Log("\n" + text)
	})

	t.Run("SamePlanUnderTwoPrefixesHasNoDiff", func(t *testing.T) {
		t.Parallel()

		a, b := setup(t), setup(t)
		ctx := context.Background()
		for i, bundle := range []*testBundle{a, b} {
			p := bundle.prefix
			now := time.Now().UnixMilli() + int64(i)*37
			require.NoError(t, bundle.rdb.HSet(ctx, p+":q:1", "timestamp", now, "opts", fmt.Sprintf(`{"timestamp":%d,"attempts":1}`, now)).Err())
			require.NoError(t, bundle.rdb.ZAdd(ctx, p+":q:completed", redis.Z{Score: float64(now + 5), Member: "1"}).Err())
			require.NoError(t, bundle.rdb.XAdd(ctx, &redis.XAddArgs{Stream: p + ":q:events", Values: []any{"event", "completed", "jobId", "1"}}).Err())
			require.NoError(t, bundle.rdb.Set(ctx, p+":q:1:lock", fmt.Sprintf("token-%d", i), time.Minute).Err())
		}
		sa, err := statedump.Dump(ctx, a.rdb, a.prefix)
		require.NoError(t, err)
		sb, err := statedump.Dump(ctx, b.rdb, b.prefix)
		require.NoError(t, err)
		require.NotEmpty(t, statedump.Diff(sa, sb))

		na, err := statedump.Normalize(sa, nil)
		require.NoError(t, err)
		nb, err := statedump.Normalize(sb, nil)
		require.NoError(t, err)
		require.Empty(t, statedump.Diff(na, nb))
	})

	t.Run("EmptyPrefix", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		s, err := statedump.Dump(context.Background(), bundle.rdb, bundle.prefix)
		require.NoError(t, err)
		require.Empty(t, s.Keys)
	})
}
