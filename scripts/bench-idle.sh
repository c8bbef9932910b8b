#!/usr/bin/env bash
# What idle sessions cost: the tpproxy binary (pool_size 16) in front of a
# sandbox server, 64 sysbench oltp_read_write clients, run alone and then
# beside IDLE idle sessions held by `tpbench idle` (every other one ran a
# statement first), alternating, ROUNDS times. Per run: TPS, p99 and p95
# (sysbench), tpproxy's RSS and Go heap in use mid-run; each run has a
# tpproxy process of its own, and the idle cost per session is the RSS of
# the run with the idle sessions less that of the run without them, over
# IDLE.
#
#   bash scripts/bench-idle.sh                 # 19,000 idle, 2 rounds of 20 s
#   IDLE=10000 ROUNDS=3 DURATION=30 bash scripts/bench-idle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
IDLE=${IDLE:-19000}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-20}
ROWS=${ROWS:-100000}
DIR=${DIR:-$(mktemp -d /tmp/tpproxy-idle.XXXXXX)}
PORT=${PORT:-23406}

bash scripts/setup.sh
go build -o bin/ ./cmd/...
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -gt $((IDLE + 200)) ] || { echo "need $((IDLE + 200)) open files, the limit is $(ulimit -n)" >&2; exit 1; }

./bin/tpbench sandbox up --dir "$DIR/sandbox" --port "$PORT" >/dev/null
cleanup() {
	[ -n "${HOLD:-}" ] && { kill "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null; } || true
	[ -n "${PROXY:-}" ] && { kill -9 "$PROXY" 2>/dev/null; wait "$PROXY" 2>/dev/null; } || true
	./bin/tpbench sandbox down --dir "$DIR/sandbox" >/dev/null 2>&1 || true
}
trap cleanup EXIT
mariadb -h 127.0.0.1 -P "$PORT" -u root -e "DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest; GRANT ALL ON sbtest.* TO 'app'@'%';"
sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=app \
	--mysql-password=secret --mysql-db=sbtest --tables=4 --table-size="$ROWS" --threads=4 prepare >/dev/null

cat >"$DIR/tpproxy.yaml" <<EOF
listen: 127.0.0.1:0
max_client_connections: $((IDLE + 1000))
users:
  - {user: app, password: secret}
backend: {addr: "127.0.0.1:$PORT", user: app, password: secret, pool_size: 16}
admin: {listen: "", http_listen: "127.0.0.1:0"}
log: {level: info, format: json}
EOF
start_proxy() { # a fresh process for every run: RSS does not shrink back
	: >"$DIR/tpproxy.log"
	./bin/tpproxy serve --config "$DIR/tpproxy.yaml" 2>"$DIR/tpproxy.log" &
	PROXY=$!
	for _ in $(seq 50); do grep -q '"http endpoint listening"' "$DIR/tpproxy.log" && break; sleep 0.1; done
	listen=$(grep '"tpproxy listening"' "$DIR/tpproxy.log" | sed 's/.*"listen":"\([^"]*\)".*/\1/')
	http=$(grep '"http endpoint listening"' "$DIR/tpproxy.log" | sed 's/.*"listen":"\([^"]*\)".*/\1/')
	sleep 1
}
stop_proxy() { kill -TERM "$PROXY"; wait "$PROXY" 2>/dev/null || true; PROXY=; }
rss() { awk '/^VmRSS/{print $2}' "/proc/$PROXY/status"; } # KiB
heap() { curl -s "http://$http/metrics" | awk '/^go_memstats_heap_inuse_bytes/{printf "%.1f", $2/1048576}'; }

run() { # label
	sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="${listen##*:}" \
		--mysql-user=app --mysql-password=secret --mysql-db=sbtest --tables=4 --table-size="$ROWS" \
		--db-ps-mode=disable --threads=64 --time="$DURATION" --percentile=99 \
		--report-interval=0 run >"$DIR/sb.log" 2>&1 &
	local sb=$!
	sleep $((DURATION / 2 + 5))
	local r h
	r=$(rss) h=$(heap)
	wait "$sb"
	local tps p99
	tps=$(awk '/transactions:/{gsub(/\(/,"",$3); print $3}' "$DIR/sb.log")
	p99=$(awk '/99th percentile:/{print $3}' "$DIR/sb.log")
	printf '%-22s %8s %8s %10.1f %8s\n' "$1" "$tps" "$p99" "$(echo "$r / 1024" | bc -l)" "$h"
	echo "$r"
}

hold() {
	./bin/tpbench idle --dsn "app:secret@tcp($listen)/sbtest" --sessions "$IDLE" >"$DIR/idle.out" 2>&1 &
	HOLD=$!
	for _ in $(seq 600); do grep -q "^holding" "$DIR/idle.out" && break; kill -0 "$HOLD" 2>/dev/null || { cat "$DIR/idle.out" >&2; exit 1; }; sleep 0.2; done
	sleep 5 # the sessions park (after 1 s without a command)
}
unhold() {
	kill -TERM "$HOLD"; wait "$HOLD" || { cat "$DIR/idle.out" >&2; exit 1; }
	grep -q "^all $IDLE sessions answered" "$DIR/idle.out" || { cat "$DIR/idle.out" >&2; exit 1; }
	HOLD=
}

echo "$(./bin/tpproxy version 2>/dev/null | head -1); $IDLE idle sessions; 64 clients oltp_read_write, ${DURATION} s; RSS and Go heap in use mid-run"
printf '%-22s %8s %8s %10s %8s\n' run TPS "p99 ms" "RSS MB" "heap MB"
start_proxy # a first run warms the server's buffer pool: not reported
run warmup >/dev/null
stop_proxy
for round in $(seq "$ROUNDS"); do
	for what in alone idle; do
		[ $((round % 2)) = 0 ] && what=$([ $what = alone ] && echo idle || echo alone)
		start_proxy
		[ $what = idle ] && hold
		out=$(run "round $round: 64 $([ $what = idle ] && echo "+ idle" || echo alone)")
		echo "$out" | head -1
		[ $what = idle ] && { with=$(echo "$out" | tail -1); unhold; } || alone=$(echo "$out" | tail -1)
		stop_proxy
	done
	echo "round $round: $(echo "($with - $alone) * 1024 / $IDLE" | bc) bytes RSS per idle session"
done
