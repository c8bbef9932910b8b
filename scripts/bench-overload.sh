#!/usr/bin/env bash
# Overload: read/write transactions from 2,000 and 4,000 clients (tpbench's
# closed loop: each client sends its next transaction when the last one
# ended) on three targets in one tpbench compare run:
#   tpproxy        the binary, pool_size 16, FIFO queues (the default)
#   tpproxy-codel  the same with thread_pool.codel_target=$TARGET: a queue
#                  that stands serves its newest first and answers those
#                  that waited past 2×target with ERR 9005 at once
#   mariadb-pool   a second sandbox with thread_handling=pool-of-threads
#                  (thread_pool_size 2), the same tables
# Both tpproxy processes front one sandbox (thread per connection). The
# report has TPS, p50/p95/p99 of the transactions that committed, and the
# share that failed (ERR 9005 for tpproxy-codel). PAUSE is how long a
# client whose transaction failed waits before its next (tpbench
# --error-pause): 0, the default, starts it at once (a closed loop that
# retries at once: every shed answer comes straight back); 1s is a client
# that backs off when told the server is overloaded. Only tpproxy-codel's
# clients see errors, so PAUSE changes only its run.
#
#   bash scripts/bench-overload.sh                  # 2000,4000 clients, 20 s steps
#   PAUSE=1s bash scripts/bench-overload.sh
#   THREADS=1000,2000 DURATION=30s TARGET=100ms bash scripts/bench-overload.sh
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2000,4000}
DURATION=${DURATION:-20s}
WARMUP=${WARMUP:-10s}
TARGET=${TARGET:-50ms}
PAUSE=${PAUSE:-0s}
ROWS=${ROWS:-100000}
DIR=${DIR:-$(mktemp -d /tmp/tpproxy-overload.XXXXXX)}
PORT=${PORT:-23416}
POOLPORT=${POOLPORT:-23417}

bash scripts/setup.sh
go build -o bin/ ./cmd/...
ulimit -n "$(ulimit -Hn)"
maxc=$(( $(echo "$THREADS" | tr ',' '\n' | sort -n | tail -1) + 100 ))

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	./bin/tpbench sandbox down --dir "$DIR/direct" >/dev/null 2>&1 || true
	./bin/tpbench sandbox down --dir "$DIR/pool" >/dev/null 2>&1 || true
}
trap cleanup EXIT
./bin/tpbench sandbox up --dir "$DIR/direct" --port "$PORT" --option max_connections=$maxc >/dev/null
./bin/tpbench sandbox up --dir "$DIR/pool" --port "$POOLPORT" --option max_connections=$maxc \
	--option thread_handling=pool-of-threads --option thread_pool_size=2 >/dev/null
for p in "$PORT" "$POOLPORT"; do
	./bin/tpbench prepare --dsn "app:secret@tcp(127.0.0.1:$p)/sbtest" --tables 4 --table-size "$ROWS" >/dev/null
done

start_proxy() { # name extra-yaml; sets ADDR
	cat >"$DIR/$1.yaml" <<EOF
listen: 127.0.0.1:0
max_client_connections: $maxc
users:
  - {user: app, password: secret}
backend: {addr: "127.0.0.1:$PORT", user: app, password: secret, pool_size: 16}
admin: {listen: "", http_listen: ""}
log: {level: info, format: json}
$2
EOF
	./bin/tpproxy serve --config "$DIR/$1.yaml" >/dev/null 2>"$DIR/$1.log" &
	PIDS+=($!)
	for _ in $(seq 50); do grep -q '"tpproxy listening"' "$DIR/$1.log" && break; sleep 0.1; done
	ADDR=$(grep '"tpproxy listening"' "$DIR/$1.log" | sed 's/.*"listen":"\([^"]*\)".*/\1/')
	[ -n "$ADDR" ] || { echo "tpproxy $1 did not start:" >&2; cat "$DIR/$1.log" >&2; exit 1; }
}
start_proxy tpproxy ""
fifo=$ADDR
start_proxy tpproxy-codel "thread_pool: {codel_target: $TARGET}"
codel=$ADDR

./bin/tpbench compare --workload oltp_read_write --ps-mode disable --tables 4 --table-size "$ROWS" \
	--threads "$THREADS" --step-duration "$DURATION" --warmup "$WARMUP" --error-pause "$PAUSE" \
	--target "tpproxy=app:secret@tcp($fifo)/sbtest" \
	--target "tpproxy-codel=app:secret@tcp($codel)/sbtest" \
	--target "mariadb-pool=app:secret@tcp(127.0.0.1:$POOLPORT)/sbtest" \
	--out "$DIR/out"
echo "report: $DIR/out/summary.md"
