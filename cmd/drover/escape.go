package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"
)

// escapeControls makes s safe to print on a terminal: every control
// character (C0 but newline and tab, DEL, C1), every bidirectional override,
// every invisible format character (zero-width space, word joiner, BOM) and
// every byte that is not UTF-8 is written as a visible escape, so a
// queue name, job name, failed reason, stack trace or log line cannot move
// the cursor, clear the screen, retitle the window or reorder the text.
// C0 and DEL become \xNN; C1 and bidi controls become \uNNNN, which is also
// a valid escape inside a JSON string (encoding/json never writes raw C0,
// so --json output stays valid).
//
// It is the one function every CLI output path goes through: Main wraps
// Stdout and Stderr in an escapingWriter, and main escapes the final error.
func escapeControls(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			if r == '\n' || r == '\t' {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\x%02x`, r)
			}
		case needsEscape(r, size):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return true
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e || r == 0x200f, r == 0x061c:
		return true // bidi embeddings, overrides, isolates and marks
	case r == 0x200b, r >= 0x2060 && r <= 0x2064, r == 0xfeff:
		return true // invisible: zero-width space, word joiner, invisible operators, BOM (as the dashboard shows them)
	}
	return false
}

// escapingWriter passes everything written through escapeControls. A UTF-8
// sequence split across two writes is held back until it is complete.
type escapingWriter struct {
	w       io.Writer
	mu      sync.Mutex
	pending []byte
}

// newEscapingWriter wraps w (nil stays nil).
func newEscapingWriter(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	if _, ok := w.(*escapingWriter); ok {
		return w
	}
	return &escapingWriter{w: w}
}

func (e *escapingWriter) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	buf := p
	if len(e.pending) > 0 {
		e.pending = append(e.pending, p...)
		buf, e.pending = e.pending, nil
	}
	// Hold back an incomplete trailing UTF-8 sequence (at most 3 bytes).
	cut := len(buf)
	for k := 1; k <= 3 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	e.pending = append(e.pending, buf[cut:]...)
	if _, err := io.WriteString(e.w, escapeControls(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rawWriter returns the writer under an escapingWriter, for output drover
// draws itself (the progress bar's carriage returns).
func rawWriter(w io.Writer) io.Writer {
	if e, ok := w.(*escapingWriter); ok {
		return e.w
	}
	return w
}

// isTerminal reports whether w is a terminal (progress bars go there only,
// unless forced with --progress).
func isTerminal(w io.Writer) bool {
	f, ok := rawWriter(w).(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
