package scripts

import (
	"context"
	"os"
	"regexp"
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
