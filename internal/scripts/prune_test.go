package scripts

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrune(t *testing.T) {
	t.Parallel()
	src := `local rcall = redis.call
local function unused(x)
  return helper(x)
end
local function helper(x)
  return x
end
local function used(x)
  -- unused() in a comment line does not count
  return inner(x)
end
local function inner(x)
  return x + 1
end
local function oneLine(x) return x end
local again
again = function(n)
  if n > 0 then
    return again(n - 1)
  end
  return 0
end
local keptByString
keptByString = function()
  return 1
end
return {used(1), "keptByString"}
`
	got := compact(prune(src))
	for _, gone := range []string{"unused", "helper", "again"} {
		require.NotRegexp(t, `\b`+gone+`\b`, got, "%s is called by nothing kept", gone)
	}
	for _, kept := range []string{"local function used(x)\nreturn inner(x)", "local function inner(x)", "local function oneLine(x) return x end",
		"local keptByString\nkeptByString = function()", "local rcall = redis.call"} {
		require.Contains(t, got, kept)
	}
}

// TestPrunedScriptsCallOnlyWhatTheyKeep: no script's source names a
// function that pruning dropped from it (it would be a nil global there),
// and the hot scripts lost the helpers they never call.
func TestPrunedScriptsCallOnlyWhatTheyKeep(t *testing.T) {
	t.Parallel()
	def := regexp.MustCompile(`(?m)^local function ([A-Za-z_][A-Za-z0-9_]*)\(|^([A-Za-z_][A-Za-z0-9_]*) = function\(`)
	for _, name := range Names() {
		full, err := expand(name, map[string]bool{})
		require.NoError(t, err)
		src := Source(name)
		kept := map[string]bool{}
		for _, m := range def.FindAllStringSubmatch(prune(full), -1) {
			kept[m[1]+m[2]] = true
		}
		for _, m := range def.FindAllStringSubmatch(full, -1) {
			fn := m[1] + m[2]
			if !kept[fn] {
				require.NotRegexp(t, `\b`+fn+`\b`, src, "%s: %s was dropped but is named", name, fn)
			}
		}
		t.Logf("%s: %d of %d bytes, %d functions kept", name, len(src), len(compact(full)), len(kept))
	}
	for _, gone := range []string{"inChunks", "removeJobKeys", "maxEvents"} {
		require.NotContains(t, Source("moveToActive"), gone)
	}
	// finishJobs builds its flow, deduplication and retention helpers in
	// cold(), on first use: they are no top-level functions of it.
	full, err := expand("finishJobs", map[string]bool{})
	require.NoError(t, err)
	pruned := prune(full)
	require.Contains(t, pruned, "\nlocal function fetchJobs(")
	require.Contains(t, pruned, "\nlocal function cold(")
	for _, fn := range []string{"parentOf", "detachFromParent", "trimFinished", "requeueNext"} {
		require.NotRegexp(t, `\n(local function |)`+fn+`( = function|)\(`, pruned, fn)
		require.Contains(t, pruned, "\n  local", fn)
	}
}

// forEachWord finds the words the pattern [A-Za-z_][A-Za-z0-9_]* finds (prune
// used the regular expression), in every line of every script and in lines
// made to catch the edges: digits before and inside a word, a word at the
// end, non-ASCII bytes.
func TestForEachWordMatchesThePattern(t *testing.T) {
	t.Parallel()
	pattern := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	lines := []string{"", "9", "9abc", "a9 _x1 __ 12ab3", "x.y:z(w)", "local a_b=c..\"d e\"", "é1é_z", "end", "q\n"}
	for _, name := range Names() {
		src, err := expand(name, map[string]bool{})
		require.NoError(t, err)
		lines = append(lines, strings.SplitAfter(src, "\n")...)
	}
	for _, line := range lines {
		var got []string
		forEachWord(line, func(w string) { got = append(got, w) })
		require.Equal(t, pattern.FindAllString(line, -1), got, "line %q", line)
	}
}
