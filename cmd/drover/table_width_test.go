package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestTablesAlignWideAndCombiningCharacters: `drover jobs` lines up its
// columns on a terminal when job names hold CJK characters (two cells
// each) or combining accents (none). The table counted runes, so each
// wide character pushed the rest of its row one cell right, and each
// combining accent pulled it one cell left.
func TestTablesAlignWideAndCombiningCharacters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	for _, name := range []string{"ascii", "名前の仕事", "cafe\u0301-e\u0301te\u0301"} {
		_, err := q.Add(ctx, name, nil, nil)
		require.NoError(t, err)
	}
	var out bytes.Buffer
	require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"jobs", "mail", "--state", "waiting",
		"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5, out.String()) // header, 3 jobs, summary
	// cells is the terminal width of s: two for a Han, Hiragana or
	// Katakana character, none for a combining mark, one for the rest.
	cells := func(s string) int {
		n := 0
		for _, r := range s {
			switch {
			case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
				n += 2
			case unicode.Is(unicode.Mn, r):
			default:
				n++
			}
		}
		return n
	}
	// The column after NAME starts at one terminal column on every line.
	col := func(line, cell string) int {
		i := strings.Index(line, cell)
		require.GreaterOrEqual(t, i, 0, "%q in %q", cell, line)
		return cells(line[:i])
	}
	want := col(lines[0], "RETRY STATE")
	for _, line := range lines[1:4] {
		require.Equal(t, want, col(line, "waiting"), "the retry state column of %q\n%s", line, out.String())
	}
}
