package scripts

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// scriptGlobals are the globals a script may read: what Redis' and the
// embedded engine's Lua provide. A script writes none (Redis refuses).
var scriptGlobals = map[string]bool{
	"redis": true, "KEYS": true, "ARGV": true, "cjson": true,
	"string": true, "math": true, "table": true,
	"tonumber": true, "tostring": true, "type": true, "unpack": true, "pairs": true, "ipairs": true,
	"next": true, "pcall": true, "error": true, "select": true,
}

// TestScriptsReadOnlyKnownGlobals compiles every script as sent (pruned,
// with its lazily built helpers) and lists the globals its code reads. A
// name the loader dropped, or a helper called outside the scope that
// defines it, would read as a global and fail only when that line runs
// on Redis ("Script attempted to access nonexistent global variable").
func TestScriptsReadOnlyKnownGlobals(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			read, written := globalsOf(t, Source(name))
			var unknown []string
			for g := range read {
				if !scriptGlobals[g] {
					unknown = append(unknown, g)
				}
			}
			sort.Strings(unknown)
			require.Empty(t, unknown, "globals read that no Lua provides")
			require.Empty(t, written, "globals written")
		})
	}
}

// globalsOf compiles src and returns the globals its code reads and writes.
func globalsOf(t *testing.T, src string) (read, written map[string]bool) {
	t.Helper()
	chunk, err := parse.Parse(strings.NewReader(src), "script")
	require.NoError(t, err)
	proto, err := lua.Compile(chunk, "script")
	require.NoError(t, err)
	read, written = map[string]bool{}, map[string]bool{}
	var walk func(p *lua.FunctionProto)
	walk = func(p *lua.FunctionProto) {
		for _, inst := range p.Code {
			op := int(inst >> 26) // gopher-lua's layout: opcode in the top 6 bits, Bx in the low 18
			if op != lua.OP_GETGLOBAL && op != lua.OP_SETGLOBAL {
				continue
			}
			g := p.Constants[int(inst&0x3ffff)].String()
			if op == lua.OP_GETGLOBAL {
				read[g] = true
			} else {
				written[g] = true
			}
		}
		for _, sub := range p.FunctionPrototypes {
			walk(sub)
		}
	}
	walk(proto)
	return read, written
}

func TestGlobalsOf(t *testing.T) {
	t.Parallel()
	read, written := globalsOf(t, "local a = 1\nlocal function f() return b + a end\nc = f()\nreturn redis.call('GET', KEYS[1])")
	require.Equal(t, map[string]bool{"b": true, "redis": true, "KEYS": true}, read)
	require.Equal(t, map[string]bool{"c": true}, written)
}
