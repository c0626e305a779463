//go:build sqlite

package main

// The lab's default database is a SQLite file, served by the pure-Go
// modernc.org/sqlite. It compiles for minutes on a small machine and nothing
// but `drover lab` uses it, so it is linked in only with `-tags sqlite`: the
// first `go run ./cmd/drover demo` stays quick. Without it, `drover lab`
// needs --database postgres://... and says so.
import _ "modernc.org/sqlite"
