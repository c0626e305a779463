package scripts

import (
	"context"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// TestScriptsLoad compiles every script on a real redis-server.
func TestScriptsLoad(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Client(t)
	require.NoError(t, Load(context.Background(), rdb))
	require.Len(t, All(), len(Names()), "every script file has a loaded script")
}

// TestScriptContracts checks each script's header and the rules every script
// follows: time comes from ARGV (never TIME), no cmsgpack or bit library (the
// embedded engine lacks them), and keys come from KEYS or the ARGV[1] base.
func TestScriptContracts(t *testing.T) {
	t.Parallel()
	keyBuilt := regexp.MustCompile(`rcall\("[A-Z]+", "`)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := luaFS.ReadFile("lua/" + name + ".lua")
			require.NoError(t, err)
			head := string(raw)
			require.True(t, strings.HasPrefix(head, "-- "+name+":"), "header names the script")
			require.Contains(t, head, "-- KEYS:")
			require.Contains(t, head, "-- ARGV:")
			src := Source(name)
			require.NotContains(t, src, `"TIME"`)
			require.NotContains(t, src, "cmsgpack")
			require.NotContains(t, src, "bit.")
			require.False(t, keyBuilt.MatchString(src), "a key literal is passed to redis.call")
		})
	}
}

// TestQueueKeysShareASlot: with a hash tag in the prefix or the name, every
// key a script receives, and every job key built from the base, lands in the
// queue's slot.
func TestQueueKeysShareASlot(t *testing.T) {
	t.Parallel()
	for _, k := range []keys.Queue{keys.New("{bull}", "emails"), keys.New("bull", "{emails}")} {
		slot := keys.Slot(k.Wait())
		for _, key := range append(k.ScriptKeys(), k.Job("42"), k.Lock("42"), k.Logs("x"), k.Dedup("d"), k.WorkerWake("w"), k.Base()+"repeat:s") {
			require.Equal(t, slot, keys.Slot(key), key)
		}
	}
}

// TestScriptCodes holds the Lua scripts to the one table of result codes:
// every negative code a script returns is in codes and in its scriptCodes
// row, and every row's code is returned by its script.
func TestScriptCodes(t *testing.T) {
	t.Parallel()
	returned := regexp.MustCompile(`(?:return |codes\[i \+ 1\] = |refuse\()(-\d+)\b`)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			found := map[int64]bool{}
			for _, m := range returned.FindAllStringSubmatch(Source(name), -1) {
				code, err := strconv.ParseInt(m[1], 10, 64)
				require.NoError(t, err)
				found[code] = true
			}
			var got []int64
			for code := range found {
				require.Contains(t, codes, code, "code %d has no error in codes", code)
				got = append(got, code)
			}
			require.ElementsMatch(t, scriptCodes[name], got, "scriptCodes[%q] lists what the script returns", name)
		})
	}
	for name := range scriptCodes {
		require.Contains(t, Names(), name)
	}
}

// TestFinishRecordSchema holds finishJobs.lua to finishRecord: the script
// reads only fields the schema names, reads every one of them, and gets the
// offsets from the schema (no hard-coded position). What Redis gets has
// the offsets written in (inlineRecord).
func TestFinishRecordSchema(t *testing.T) {
	t.Parallel()
	src, err := expand("finishJobs", map[string]bool{})
	require.NoError(t, err)
	require.Contains(t, src, "local REC = {id = 1, token = 2,")
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`REC\.(\w+)`).FindAllStringSubmatch(src, -1) {
		used[m[1]] = true
	}
	names := finishRecordNames()
	for name := range used {
		require.Contains(t, names, name, "finishJobs.lua reads REC.%s, which finishRecord does not have", name)
	}
	for _, name := range names {
		require.True(t, used[name], "finishRecord sends %s, which finishJobs.lua never reads", name)
	}
	require.NotRegexp(t, `ARGV\[(o|at\[i\]) \+ \d`, src, "record fields are read by name")
	require.Contains(t, src, "local o = 12", "records start after ARGV 1-12 (base, the FinishJobs arguments before recs)")
	require.Contains(t, src, "REC_FIELDS or REC_HEAD")
	require.Equal(t, "more", finishRecord[finishHead-1].name, "the head ends with the field that announces the tail")

	sent := Source("finishJobs")
	require.NotContains(t, sent, "REC.", "every field read is a number in what Redis runs")
	require.NotContains(t, sent, "local REC =")
	require.Contains(t, sent, `ARGV[o + 7] == "1" and REC_FIELDS or REC_HEAD`, "more is field 7")
}

// TestInlineRecord: offsets replace the reads of a table that is only read
// by field name; a script that indexes it with a variable keeps it.
func TestInlineRecord(t *testing.T) {
	t.Parallel()
	table := "local REC = {id = 1, more = 12}\nlocal REC_FIELDS = 12\n"
	require.Equal(t, "local REC_FIELDS = 12\nx = ARGV[o + 1] .. ARGV[o + 12] .. REC.nope\n",
		inlineRecord(table+"x = ARGV[o + REC.id] .. ARGV[o + REC.more] .. REC.nope\n"))
	dynamic := table + "x = ARGV[o + REC[name]] .. ARGV[o + REC.id]\n"
	require.Equal(t, dynamic, inlineRecord(dynamic))
	require.Contains(t, Source("addFlow"), "local REC = {", "addFlow reads fields by a variable name")
}

// TestQueueKeyLines holds include/queue.lua (with queuefirst.lua) to
// keys.Queue.ScriptKeys: the same keys, the i-th listed read from KEYS[i]
// when declared (a
// cluster) and built from the base otherwise (Standalone); the loader keeps
// only the lines of keys a script names.
func TestQueueKeyLines(t *testing.T) {
	t.Parallel()
	k := keys.New("{bull}", "q")
	lines := regexp.MustCompile(`(?m)^local (\w+Key) = KEYS\[(\d+)\](?: or base \.\. "([^"]*)")?$`).FindAllStringSubmatch(Source("include/queue"), -1)
	require.Len(t, lines, len(k.ScriptKeys()))
	// queue.lua names the keys of queuefirst.lua first: by KEYS index.
	sort.Slice(lines, func(i, j int) bool {
		a, _ := strconv.Atoi(lines[i][2])
		b, _ := strconv.Atoi(lines[j][2])
		return a < b
	})
	for i, m := range lines {
		require.Equal(t, strconv.Itoa(i+1), m[2], m[1])
		if i == 0 {
			require.Empty(t, m[3], "the wait list is declared in both forms")
			require.Equal(t, k.Wait(), k.ScriptKeys()[0])
			continue
		}
		require.Equal(t, k.ScriptKeys()[i], k.Base()+m[3], m[1])
	}
	full := []any{len(k.ScriptKeys())}
	for _, key := range k.ScriptKeys() {
		full = append(full, key)
	}
	require.Equal(t, append(full, k.Base()), k.ScriptArgs(), "a cluster declares every key")
	require.Equal(t, []any{1, k.Wait(), k.Base()}, k.Standalone().ScriptArgs())

	src := Source("getRateLimitTtl")
	require.Contains(t, src, `local limiterKey = KEYS[16] or base .. "limiter"`)
	require.NotContains(t, src, `local waitingChildrenKey =`, "a key the script never names is not built")
}
