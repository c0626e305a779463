#!/usr/bin/env bash
# Runs drover's side-by-side benchmark (issue 7). Flags go to bench/cmd/compare,
# e.g. ./run.sh -n 5000 -runs 1 -only process_c100,bullmq,asynq
# It installs what is missing (redis-server, the pinned Node BullMQ peer),
# builds the Go peer, starts its own redis-server and PostgreSQL cluster,
# writes results/latest.md and prints one JSON line per scenario.
set -euo pipefail
cd "$(dirname "$0")"
go build -o bin/compare ./cmd/compare
exec bin/compare "$@"
