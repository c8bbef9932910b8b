#!/usr/bin/env bash
# Reproduces the peers table on one machine, in one run, with the real
# binaries and sysbench as the client (tpbench peers):
#
#   - a private MariaDB (one thread per connection)           direct
#   - the tpproxy binary in front of it, pool_size 16         tpproxy
#   - haproxy in TCP mode, 1:1, in front of it (if installed) haproxy
#   - a second private MariaDB with thread_handling=pool-of-threads,
#     thread_pool_size=2, holding the same sysbench tables    mariadb-pool
#
# sysbench --db-ps-mode=disable, 4 tables × 100,000 rows, oltp_point_select
# with 8 clients and oltp_read_write with 1,000, 20 s measured after 5 s of
# warmup, 2 rounds with the targets interleaved. Per run: TPS, p95, errors,
# and the CPU µs per statement of the relay and of the server (utime+stime
# from /proc/PID/stat over the statements sysbench reported); then tpproxy's
# ratios to haproxy, mariadb-pool and direct. The markdown table goes to
# stdout and to DIR/peers.md, every figure to DIR/peers.json.
#
# Arguments go to `tpbench peers`, e.g.
#   bash scripts/bench-peers.sh --table-size 10000 --rounds 1 --out /tmp/peers
#   bash scripts/bench-peers.sh --steps oltp_read_write/64,oltp_read_write/1000
#   bash scripts/bench-peers.sh --proxy-set thread_pool.size=4 --pool-size 32
#   bash scripts/bench-peers.sh --pool-of-threads-size 4 --haproxy off
# Environment:
#   TPPROXY_GOMAXPROCS=N     GOMAXPROCS of the tpproxy process
#   TPBENCH_PROXY_CONFIG=F   a YAML file merged over tpproxy's generated
#                            configuration (same as --proxy-config F)
# It takes about 8 minutes with the defaults (haproxy: apt-get install haproxy).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
command -v haproxy >/dev/null 2>&1 || echo "bench-peers: no haproxy installed; the table will lack that target (apt-get install haproxy)" >&2
go build -o bin/ ./cmd/...
exec ./bin/tpbench peers "$@"
