#!/usr/bin/env bash
# One tpbench compare as N shard processes on this machine, merged: the
# same as N load hosts (see README, "Benchmarking from many hosts"), for
# trying it out or for a load that one process cannot drive. Shard 0
# listens on BARRIER, the others connect; every step starts on all of
# them at once. The arguments are tpbench compare's (targets, workload,
# steps); --shard, --barrier and --out are added per shard.
#
#   N=3 OUT=/tmp/shards bash scripts/bench-shards.sh \
#     --target direct='root@tcp(127.0.0.1:3306)/sbtest' \
#     --workload oltp_point_select --threads 8,24 --step-duration 30s
#
# Each shard writes $OUT/shard<i>/ and its log $OUT/shard<i>.log; the
# merged report is $OUT/merged/ (summary.md, report.html).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-3}
OUT=${OUT:-$(mktemp -d /tmp/tpbench-shards.XXXXXX)}
BARRIER=${BARRIER:-127.0.0.1:7070}
TPBENCH=${TPBENCH:-./bin/tpbench}
[ -x "$TPBENCH" ] || go build -o bin/ ./cmd/tpbench
mkdir -p "$OUT"

pids=()
cleanup() {
	# Only the shards this script started, by their process ids.
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup INT TERM
for ((i = 0; i < N; i++)); do
	"$TPBENCH" compare --shard "$i/$N" --barrier "$BARRIER" --out "$OUT/shard$i" "$@" >"$OUT/shard$i.log" 2>&1 &
	pids+=($!)
done
failed=0
for ((i = 0; i < N; i++)); do
	if ! wait "${pids[$i]}"; then
		echo "shard $i/$N failed:" >&2
		tail -n 5 "$OUT/shard$i.log" >&2
		failed=1
	fi
done
[ "$failed" = 0 ] || exit 1
dirs=()
for ((i = 0; i < N; i++)); do dirs+=("$OUT/shard$i"); done
"$TPBENCH" merge "${dirs[@]}" --out "$OUT/merged"
