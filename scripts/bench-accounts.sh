#!/usr/bin/env bash
# What per-account pools cost (backend.identity passthrough): 1,000 clients
# of oltp_read_write through the tpproxy binary on pool_size 16, as four
# sysbench processes of 250 threads each, all logged in as one account or
# each as its own account, alternating, ROUNDS times. Per run: total TPS,
# each process's p95, sysbench's ignored errors, tpproxy's and the
# server's CPU µs per statement (utime+stime from /proc over the measured
# seconds) and the account switches (tpproxy_backend_account_switches_total).
#
#   bash scripts/bench-accounts.sh            # 2 rounds of 25 s, 4 x 100,000 rows
#   ROUNDS=3 DURATION=30 bash scripts/bench-accounts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-25}
ROWS=${ROWS:-100000}
DIR=${DIR:-$(mktemp -d /tmp/tpproxy-accounts.XXXXXX)}
PORT=${PORT:-23306}

bash scripts/setup.sh
go build -o bin/ ./cmd/...
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

./bin/tpbench sandbox up --dir "$DIR/sandbox" --port "$PORT" --option max_connections=3000 >/dev/null
cleanup() {
	[ -n "${PROXY:-}" ] && { kill -9 "$PROXY" 2>/dev/null; wait "$PROXY" 2>/dev/null; } || true
	./bin/tpbench sandbox down --dir "$DIR/sandbox" >/dev/null 2>&1 || true
}
trap cleanup EXIT
sql="DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest; GRANT ALL ON sbtest.* TO 'app'@'%';"
for i in 1 2 3 4; do
	sql="$sql DROP USER IF EXISTS 'sb$i'@'%'; CREATE USER 'sb$i'@'%' IDENTIFIED BY 'sb$i-pw'; GRANT ALL ON sbtest.* TO 'sb$i'@'%';"
done
mariadb -h 127.0.0.1 -P "$PORT" -u root -e "$sql"
sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=app \
	--mysql-password=secret --mysql-db=sbtest --tables=4 --table-size="$ROWS" --threads=4 prepare >/dev/null

cat >"$DIR/tpproxy.yaml" <<EOF
listen: 127.0.0.1:0
max_client_connections: 20000
users:
  - {user: app, password: secret}
  - {user: sb1, password: sb1-pw}
  - {user: sb2, password: sb2-pw}
  - {user: sb3, password: sb3-pw}
  - {user: sb4, password: sb4-pw}
backend: {addr: "127.0.0.1:$PORT", user: app, password: secret, pool_size: 16}
admin: {listen: "", http_listen: "127.0.0.1:0"}
log: {level: info, format: json}
EOF
./bin/tpproxy serve --config "$DIR/tpproxy.yaml" 2>"$DIR/tpproxy.log" &
PROXY=$!
for _ in $(seq 50); do grep -q '"tpproxy listening"' "$DIR/tpproxy.log" && break; sleep 0.1; done
listen=$(grep '"tpproxy listening"' "$DIR/tpproxy.log" | sed 's/.*"listen":"\([^"]*\)".*/\1/')
http=$(grep '"http endpoint listening"' "$DIR/tpproxy.log" | sed 's/.*"listen":"\([^"]*\)".*/\1/')
server=$(./bin/tpbench sandbox status --dir "$DIR/sandbox" 2>/dev/null | sed -n 's/.*pid[: =]*\([0-9][0-9]*\).*/\1/p' | head -1)
[ -n "$server" ] || server=$(pgrep -f "mariadbd.*$DIR/sandbox" | head -1)
tick=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
switches() { curl -s "http://$http/metrics" | awk '/^tpproxy_backend_account_switches_total/{print $2}'; }

run() { # mode: one | four
	local mode=$1 pids=() i u p
	for i in 1 2 3 4; do
		if [ "$mode" = one ]; then u=app p=secret; else u=sb$i p=sb$i-pw; fi
		sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="${listen##*:}" \
			--mysql-user=$u --mysql-password=$p --mysql-db=sbtest --tables=4 --table-size="$ROWS" \
			--db-ps-mode=disable --threads=250 --time="$DURATION" --report-interval=0 run >"$DIR/sb.$i.log" 2>&1 &
		pids+=($!)
	done
	sleep 5 # connecting and warming up: not measured
	local c0 s0 w0 c1 s1 w1 q0 q1
	c0=$(cpu $PROXY) s0=$(cpu "$server") w0=$(switches)
	sleep $((DURATION - 5))
	c1=$(cpu $PROXY) s1=$(cpu "$server") w1=$(switches)
	wait "${pids[@]}"
	local tps=0 q=0 p95="" errs=""
	for i in 1 2 3 4; do
		tps=$(echo "$tps + $(awk '/transactions:/{gsub(/\(/,"",$3); print $3}' "$DIR/sb.$i.log")" | bc)
		q=$((q + $(awk '/queries:/{print $2; exit}' "$DIR/sb.$i.log")))
		p95="$p95 $(awk '/95th percentile:/{print $3}' "$DIR/sb.$i.log")"
		errs="$errs $(awk '/ignored errors:/{print $3}' "$DIR/sb.$i.log")"
	done
	# Statements in the measured seconds, at the run's average rate.
	local measured
	measured=$(echo "$q * ($DURATION - 5) / $DURATION" | bc)
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$mode" "$tps" "${p95# }" "${errs# }" \
		"$(echo "scale=1; ($c1 - $c0) * 1000000 / $tick / $measured" | bc)" \
		"$(echo "scale=1; ($s1 - $s0) * 1000000 / $tick / $measured" | bc)" "$(echo "$w1 - $w0" | bc)"
}

echo "| accounts | TPS | p95 ms (each process) | ignored errors | tpproxy CPU µs/stmt | server CPU µs/stmt | account switches |"
echo "|---|---|---|---|---|---|---|"
for _ in $(seq "$ROUNDS"); do
	run one
	run four
done
