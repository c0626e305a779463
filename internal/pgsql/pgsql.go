// Package pgsql holds the SQL of drover's database kit, for PostgreSQL and
// SQLite: the numbered migrations that package pgmigrate applies and the named
// queries that packages idempotency, outbox and pgmigrate run. The SQL lives in
// .sql files embedded with go:embed, so it diffs and lints as SQL; Go code
// holds no SQL strings of its own.
//
// # Layout
//
//	<dialect>/migrations/NNN_name.up.sql    applied by pgmigrate.Up, in version order
//	<dialect>/migrations/NNN_name.down.sql  applied by pgmigrate.Down, in reverse
//	<dialect>/queries/<topic>.sql           named queries, sqlc style
//
// where <dialect> is postgres or sqlite. Both dialects have the same
// migration versions and names. A query file is a sequence of statements, each
// introduced by a line
//
//	-- name: QueryName :kind
//
// (the kind, :one, :many, :exec or :execrows, documents the call site and
// keeps the files ready for sqlc). Comment lines that follow the name line are
// part of the query and explain it. Where the dialects differ only in
// placeholders, SQLite queries use numbered parameters (?1, ?2) in the order of
// the PostgreSQL ones ($1, $2), so one Go call site serves both.
package pgsql

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Dialect is the SQL dialect of a database.
type Dialect int

// The dialects drover's database kit supports.
const (
	Postgres Dialect = iota + 1
	SQLite
)

func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case SQLite:
		return "sqlite"
	default:
		return "Dialect(" + strconv.Itoa(int(d)) + ")"
	}
}

// Migration is one numbered schema change, in one dialect.
type Migration struct {
	Version int    // 1, 2, ...: the NNN of the file name
	Name    string // "operations": the name part of the file name
	Up      string // SQL applying the change
	Down    string // SQL reverting it
}

//go:embed postgres sqlite
var files embed.FS

type dialectSQL struct {
	migrations []Migration
	queries    map[string]string
}

var loaded = sync.OnceValues(func() (map[Dialect]*dialectSQL, error) {
	out := make(map[Dialect]*dialectSQL)
	for _, d := range []Dialect{Postgres, SQLite} {
		sql, err := load(files, d.String())
		if err != nil {
			return nil, fmt.Errorf("pgsql: %s: %w", d, err)
		}
		out[d] = sql
	}
	return out, nil
})

func mustLoad(d Dialect) *dialectSQL {
	all, err := loaded()
	if err != nil {
		panic(err) // our own embedded files are malformed: TestEmbeddedSQL fails first
	}
	sql, ok := all[d]
	if !ok {
		panic(fmt.Sprintf("pgsql: unknown dialect %s", d))
	}
	return sql
}

// Migrations returns the dialect's migrations in version order. The slice is
// the caller's to keep.
func Migrations(d Dialect) []Migration {
	return slices.Clone(mustLoad(d).migrations)
}

// Query returns the named query of the dialect. It panics when there is no
// such query: names are constants in drover's code, and a missing one is a bug
// that the packages' tests catch at their first call.
func Query(d Dialect, name string) string {
	q, ok := mustLoad(d).queries[name]
	if !ok {
		panic(fmt.Sprintf("pgsql: no %s query named %q", d, name))
	}
	return q
}

// QueryNames returns the names of the dialect's queries, sorted.
func QueryNames(d Dialect) []string {
	names := make([]string, 0, len(mustLoad(d).queries))
	for name := range mustLoad(d).queries {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

var migrationFile = regexp.MustCompile(`^([0-9]{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

func load(fsys fs.FS, dir string) (*dialectSQL, error) {
	out := &dialectSQL{queries: make(map[string]string)}

	entries, err := fs.ReadDir(fsys, path.Join(dir, "migrations"))
	if err != nil {
		return nil, err
	}
	byVersion := make(map[int]*Migration)
	for _, e := range entries {
		m := migrationFile.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s is not named NNN_name.up.sql or NNN_name.down.sql", e.Name())
		}
		version, _ := strconv.Atoi(m[1])
		b, err := fs.ReadFile(fsys, path.Join(dir, "migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		mig := byVersion[version]
		if mig == nil {
			mig = &Migration{Version: version, Name: m[2]}
			byVersion[version] = mig
		}
		if mig.Name != m[2] {
			return nil, fmt.Errorf("migration %03d is named both %q and %q", version, mig.Name, m[2])
		}
		body := strings.TrimSpace(string(b))
		if body == "" {
			return nil, fmt.Errorf("migration file %s is empty", e.Name())
		}
		if m[3] == "up" {
			mig.Up = body
		} else {
			mig.Down = body
		}
	}
	for v := 1; v <= len(byVersion); v++ {
		mig, ok := byVersion[v]
		if !ok {
			return nil, fmt.Errorf("migration versions must run 1..%d without gaps; %03d is missing", len(byVersion), v)
		}
		if mig.Up == "" || mig.Down == "" {
			return nil, fmt.Errorf("migration %03d_%s needs both an .up.sql and a .down.sql file", v, mig.Name)
		}
		out.migrations = append(out.migrations, *mig)
	}

	queryFiles, err := fs.Glob(fsys, path.Join(dir, "queries", "*.sql"))
	if err != nil {
		return nil, err
	}
	for _, file := range queryFiles {
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		queries, err := ParseQueries(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for name, q := range queries {
			if _, dup := out.queries[name]; dup {
				return nil, fmt.Errorf("%s: query %s is defined twice", file, name)
			}
			out.queries[name] = q
		}
	}
	return out, nil
}

var nameLine = regexp.MustCompile(`^--\s*name:\s*([A-Za-z][A-Za-z0-9_]*)\s*(:[a-z]+)?\s*$`)

// ParseQueries splits the text of a query file into its named queries. Text
// before the first name line (the file's header comment) belongs to no query.
// A query's trailing semicolon is dropped.
func ParseQueries(text string) (map[string]string, error) {
	out := make(map[string]string)
	var name string
	var body strings.Builder
	flush := func() error {
		if name == "" {
			return nil
		}
		q := strings.TrimSuffix(strings.TrimSpace(body.String()), ";")
		if !hasStatement(q) {
			return fmt.Errorf("query %s has no statement", name)
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("query %s is defined twice", name)
		}
		out[name] = q
		return nil
	}
	for line := range strings.Lines(text) {
		trimmed := strings.TrimSpace(line)
		if m := nameLine.FindStringSubmatch(trimmed); m != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			name = m[1]
			body.Reset()
			continue
		}
		if strings.HasPrefix(trimmed, "-- name:") {
			return nil, fmt.Errorf("malformed name line %q", trimmed)
		}
		if name != "" {
			body.WriteString(line)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// hasStatement reports whether q holds more than comments and blank lines.
func hasStatement(q string) bool {
	for line := range strings.Lines(q) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "--") {
			return true
		}
	}
	return false
}
