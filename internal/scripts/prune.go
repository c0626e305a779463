package scripts

import (
	"regexp"
	"strings"
)

// prune drops the top-level local functions of an expanded script that
// nothing in it calls, directly or through other kept functions. An include
// brings every helper it has, and Redis runs a script's whole top-level
// chunk on every call: each "local function" there is a closure made (and
// later collected) per call, with an upvalue search per captured local, so
// finishJobs spent ~40k instructions a call on helpers of flows, dedup and
// retention it mostly never ran. Pruning keeps the includes whole for the
// reader and sends Redis only what the script can reach.
//
// It reads the layout every file here has: a top-level function starts at
// the beginning of a line with "local function name(" (or "local name" on
// one line, then "name = function(" for a function that calls itself
// through its name) and ends at the first line that is "end" with nothing
// before it. A name counts as used wherever it appears as a word in a line
// that is not a whole-line comment, strings and trailing comments included,
// so a doubt keeps a function; only one whose name appears nowhere outside
// its own body (and the bodies of other dropped functions) goes.
func prune(src string) string {
	lines := strings.SplitAfter(src, "\n")
	type def struct {
		name       string
		decl       int // line of "local name" (-1: none)
		start, end int // lines of the definition, end inclusive
	}
	var defs []def
	forward := map[string]int{}
	in := make([]int, len(lines)) // 1 + index into defs of the function a line belongs to; 0: none
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r\n")
		var name string
		decl := -1
		if m := localFunc.FindStringSubmatch(line); m != nil {
			name = m[1]
		} else if m := forwardDecl.FindStringSubmatch(line); m != nil {
			forward[m[1]] = i
			continue
		} else if m := assignFunc.FindStringSubmatch(line); m != nil {
			d, ok := forward[m[1]]
			if !ok {
				continue
			}
			name, decl = m[1], d
		} else {
			continue
		}
		end := i
		for end < len(lines) && strings.TrimRight(lines[end], " \t\r\n") != "end" {
			end++
		}
		if end == len(lines) || strings.HasSuffix(strings.TrimRight(line, " \t\r\n"), " end") {
			// Not the layout prune knows (or a one-line function): keep it.
			continue
		}
		defs = append(defs, def{name: name, decl: decl, start: i, end: end})
		for j := i; j <= end; j++ {
			in[j] = len(defs)
		}
		if decl >= 0 {
			in[decl] = len(defs)
		}
		i = end
	}
	if len(defs) == 0 {
		return src
	}
	byName := map[string][]int{}
	for k, d := range defs {
		byName[d.name] = append(byName[d.name], k)
	}
	// Words of the code outside every function, then of each function.
	rest := map[string]bool{}
	body := make([]map[string]bool, len(defs))
	for k := range body {
		body[k] = map[string]bool{}
	}
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), "--") {
			continue
		}
		words := rest
		if in[i] > 0 {
			words = body[in[i]-1]
		}
		forEachWord(line, func(w string) { words[w] = true })
	}
	used := make([]bool, len(defs))
	var queue []int
	mark := func(words map[string]bool) {
		for w := range words {
			for _, k := range byName[w] {
				if !used[k] {
					used[k] = true
					queue = append(queue, k)
				}
			}
		}
	}
	mark(rest)
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		mark(body[k])
	}
	var out strings.Builder
	out.Grow(len(src))
	for i, line := range lines {
		if in[i] > 0 && !used[in[i]-1] {
			continue
		}
		out.WriteString(line)
	}
	return out.String()
}

var (
	localFunc   = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	forwardDecl = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	assignFunc  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*) = function\(`)
)

// forEachWord calls f with each word of line, a name as Lua spells one
// ([A-Za-z_][A-Za-z0-9_]*, taken leftmost and longest), in order. With a
// regular expression doing this, expanding all the scripts cost 185 million
// instructions; with this loop, 54 million (callgrind).
func forEachWord(line string, f func(string)) {
	for i := 0; i < len(line); {
		if !wordStart(line[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(line) && (wordStart(line[j]) || line[j] >= '0' && line[j] <= '9') {
			j++
		}
		f(line[i:j])
		i = j
	}
}

func wordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// pruneKeys drops the queue-key lines of include/queue.lua ("local xKey =
// KEYS[i] or base .. ...") whose name nothing else in src uses: each is a
// string concatenation Redis would run on every call for nothing.
func pruneKeys(src string) string {
	lines := strings.SplitAfter(src, "\n")
	words := map[string]int{}
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), "--") {
			continue
		}
		forEachWord(line, func(w string) { words[w]++ })
	}
	var out strings.Builder
	out.Grow(len(src))
	for _, line := range lines {
		if !strings.HasPrefix(line, "local ") || !strings.Contains(line, "Key = KEYS[") {
			out.WriteString(line)
			continue
		}
		if m := keyLine.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil && words[m[1]] == 1 {
			continue
		}
		out.WriteString(line)
	}
	return out.String()
}

// inlineRecord replaces each REC.field of a script with the field's offset
// and drops the REC table (recordLua), when the script only reads fields by
// name: a table built on every call (15 fields: ~5,000 instructions) and a
// look-up per read, for numbers fixed when the script is loaded. A script
// that indexes REC with a variable keeps the table.
func inlineRecord(src string) string {
	m := recTable.FindStringSubmatchIndex(src)
	if m == nil || strings.Contains(src, "REC[") {
		return src
	}
	offsets := map[string]string{}
	for _, f := range recField.FindAllStringSubmatch(src[m[2]:m[3]], -1) {
		offsets[f[1]] = f[2]
	}
	src = src[:m[0]] + src[m[1]:]
	return recRead.ReplaceAllStringFunc(src, func(r string) string {
		if n, ok := offsets[strings.TrimPrefix(r, "REC.")]; ok {
			return n
		}
		return r // unknown field: left for Lua to report (nil arithmetic)
	})
}

var (
	keyLine  = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*Key) = KEYS\[\d+\]( or base \.\. "[^"]*")?$`)
	recTable = regexp.MustCompile(`(?m)^local REC = \{([^}]*)\}\n`)
	recField = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*) = (\d+)`)
	recRead  = regexp.MustCompile(`\bREC\.[A-Za-z_][A-Za-z0-9_]*`)
)
