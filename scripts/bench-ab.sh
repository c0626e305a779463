#!/usr/bin/env bash
# bench-ab.sh REV_A REV_B [ROUNDS] [JOBS]
#
# Compares the processing cost of two revisions on one harness: each
# revision is checked out in a temporary worktree, this checkout's
# bench_process_test.go (BenchmarkProcessPhase) is copied into it, both test
# binaries are built first, then run alternately ROUNDS times (default 5)
# with JOBS jobs each (default 300000), so machine noise hits both alike.
# Prints every run and the medians of jobs/s, client and Redis CPU per job.
# Run it on a quiet machine; the numbers are for comparison, not absolute.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 REV_A REV_B [ROUNDS] [JOBS]" >&2; exit 2; }
a=$1 b=$2 rounds=${3:-5} jobs=${4:-300000}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
cleanup() {
	for r in A B; do git -C "$root" worktree remove --force "$tmp/$r" >/dev/null 2>&1 || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

for r in A B; do
	rev=$a
	[ "$r" = B ] && rev=$b
	git -C "$root" worktree add --detach "$tmp/$r" "$rev" >/dev/null
	cp "$root/bench_process_test.go" "$tmp/$r/"
	(cd "$tmp/$r" && go test -c -o "$tmp/$r.test" .)
	echo "$r = $rev ($(git -C "$root" rev-parse --short "$rev"))"
done

for i in $(seq "$rounds"); do
	for r in A B; do
		line=$("$tmp/$r.test" -test.run '^$' -test.bench '^BenchmarkProcessPhase$' -test.benchtime "${jobs}x" | grep '^BenchmarkProcessPhase')
		echo "$r $line" | tee -a "$tmp/runs"
	done
done

# Medians per revision of the three reported metrics.
for r in A B; do
	for unit in jobs/s client-µs/job redis-µs/job; do
		grep "^$r " "$tmp/runs" | awk -v u="$unit" '{for (i = 1; i <= NF; i++) if ($i == u) print $(i-1)}' | sort -g |
			awk -v r="$r" -v u="$unit" '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s median %s %s (of %d)\n", r, m, u, NR}'
	done
done
