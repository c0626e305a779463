package main

// The tests run the lab on SQLite whatever the build tags: the test binary
// is the lab's worker process too (see TestMain).
import _ "modernc.org/sqlite"
