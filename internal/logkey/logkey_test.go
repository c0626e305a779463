package logkey_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysAreConstants reads every product Go file of the module and fails
// on a log attribute whose key is a string literal (slog.String("queue",
// ...), or a "key", value pair passed to a logger), so that every package
// logs with the constants of this package and logs join up by key.
func TestKeysAreConstants(t *testing.T) {
	root := filepath.Join("..", "..")
	attrFuncs := map[string]bool{"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
		"Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true}
	// first key/value argument of each logger method
	kvFrom := map[string]int{"Debug": 1, "Info": 1, "Warn": 1, "Error": 1, "DebugContext": 2, "InfoContext": 2,
		"WarnContext": 2, "ErrorContext": 2, "Log": 3, "With": 0}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testkit", "testdata", ".git", "bench":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		slogName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"log/slog"` {
				slogName = "slog"
				if imp.Name != nil {
					slogName = imp.Name.Name
				}
			}
		}
		if slogName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			literal := func(e ast.Expr) bool {
				lit, ok := e.(*ast.BasicLit)
				return ok && lit.Kind == token.STRING
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == slogName {
				if attrFuncs[sel.Sel.Name] && len(call.Args) > 0 && literal(call.Args[0]) {
					t.Errorf("%s: slog.%s with a literal key: use a logkey constant", fset.Position(call.Pos()), sel.Sel.Name)
				}
				return true
			}
			if from, ok := kvFrom[sel.Sel.Name]; ok {
				for i := from; i < len(call.Args); i++ {
					if literal(call.Args[i]) {
						t.Errorf("%s: %s with a literal key/value argument: use slog attributes with logkey constants",
							fset.Position(call.Args[i].Pos()), sel.Sel.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read only %d files: wrong root?", files)
	}
}
