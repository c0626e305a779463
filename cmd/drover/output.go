package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/width"

	"github.com/seed40057009/drover/inspect"
)

// writeJSON prints v as indented JSON, for scripts (--json).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table prints rows aligned in columns, for people. It measures cells in
// terminal columns, not runes as text/tabwriter does: a CJK character takes
// two, a combining accent none, and a row holding either stayed out of line.
type table struct {
	w    io.Writer
	rows [][]string
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w}
	t.row(toAny(header)...)
	return t
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (t *table) row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		// Tabs and newlines in job data must not break the columns.
		parts[i] = escapeControls(strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(fmt.Sprint(c)))
	}
	t.rows = append(t.rows, parts)
}

// flush writes the rows: every cell but a row's last is padded to its
// column's widest cell plus two spaces, as the tabwriter before did.
func (t *table) flush() error {
	var widths []int
	for _, r := range t.rows {
		for i := range len(r) - 1 {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], cellWidth(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-cellWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	t.rows = nil
	_, err := io.WriteString(t.w, b.String())
	return err
}

// cellWidth is how many terminal columns s takes: two for a wide or
// fullwidth character (CJK, most emoji), none for a combining mark or a
// zero-width character, one for the rest.
func cellWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		default:
			switch width.LookupRune(r).Kind() {
			case width.EastAsianWide, width.EastAsianFullwidth:
				n += 2
			default:
				n++
			}
		}
	}
	return n
}

// clip shortens s to n runes for a table cell.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func when(t inspect.Instant) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// until renders t relative to now: "in 59m58s" or "3s ago".
func until(t inspect.Instant) string {
	d := time.Until(t.Time).Round(time.Second)
	if d >= 0 {
		return "in " + d.String()
	}
	return (-d).String() + " ago"
}

// isTerminalReader reports whether r is a terminal (a prompt can be
// answered there).
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar draws "[#####.....] done/total" on one line, redrawn in place.
type progressBar struct {
	w     io.Writer
	label string
	drawn bool
}

func (p *progressBar) update(done, total int) {
	const width = 30
	if total <= 0 {
		total = max(done, 1)
	}
	filled := min(width, done*width/total)
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %3d%%", p.label, strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		done, total, done*100/total)
	p.drawn = true
}

func (p *progressBar) finish() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// writeJSONLine prints v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}
