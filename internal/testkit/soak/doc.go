// Package soak is drover's chaos soak: producers (plain adds, bulk adds and
// the PostgreSQL outbox with its relay) and four worker processes run against
// a real redis-server with AOF and a throwaway PostgreSQL cluster while a
// driver injects faults at random: worker SIGKILLs, Redis restarts (SIGKILL
// with appendfsync always, SIGTERM with everysec), Redis SIGSTOP for longer
// than the lock, connection resets and added latency through an in-process
// TCP proxy (internal/testkit/faultproxy), and PostgreSQL crashes. At the end
// it checks that nothing was lost or duplicated and prints a report.
//
// Run it with `make soak` (DURATION=10m for a long run). Everything listens
// on 127.0.0.1. The test is skipped unless DROVER_SOAK_DURATION is set, so
// `go test ./...` does not run it by accident; `make test` runs it for 60 s.
package soak
