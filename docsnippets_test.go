package drover_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocSnippetsAreExamples: every Go code snippet in a package's doc
// comments (an indented block that parses as Go statements or
// declarations) is, line for line (indentation aside), in one of that
// package's example_*_test.go files, so it compiles (and runs, when the
// example has an Output). Indented blocks that are not Go (route lists,
// filter syntax) are left alone.
func TestDocSnippetsAreExamples(t *testing.T) {
	t.Parallel()
	var dirs []string
	require.NoError(t, filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch {
			case path != "." && strings.HasPrefix(d.Name(), "."),
				path == "internal", path == "bench", path == "artifacts", path == "testdata", path == "node_modules":
				return filepath.SkipDir
			}
			dirs = append(dirs, path)
		}
		return nil
	}))
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		var examples strings.Builder
		var snippets []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			if strings.HasSuffix(f, "_test.go") {
				if strings.HasPrefix(filepath.Base(f), "example_") {
					examples.WriteString(normalize(string(b)))
				}
				continue
			}
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, f, b, parser.ParseComments)
			require.NoError(t, err)
			for _, cg := range af.Comments {
				for _, block := range codeBlocks(cg) {
					if isGo(block) {
						snippets = append(snippets, f+":\n"+block)
					}
				}
			}
		}
		for _, s := range snippets {
			where, code, _ := strings.Cut(s, ":\n")
			if !strings.Contains(examples.String(), normalize(code)) {
				t.Errorf("%s: doc snippet not in an example_*_test.go of its package:\n%s", where, code)
			}
		}
	}
}

// codeBlocks returns the tab-indented blocks of a comment group.
func codeBlocks(cg *ast.CommentGroup) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	for _, c := range cg.List {
		line, ok := strings.CutPrefix(c.Text, "//")
		if !ok {
			flush()
			continue
		}
		if strings.HasPrefix(line, "\t") {
			cur = append(cur, line[1:])
			continue
		}
		if strings.TrimSpace(line) == "" && len(cur) > 0 {
			cur = append(cur, "")
			continue
		}
		flush()
	}
	flush()
	return out
}

// isGo reports whether block parses as Go statements or declarations.
func isGo(block string) bool {
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+block+"\n}\n", 0); err == nil {
		return true
	}
	_, err := parser.ParseFile(fset, "", "package p\n"+block+"\n", 0)
	return err == nil
}
