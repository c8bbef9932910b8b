#!/usr/bin/env bash
# The demo: a private MariaDB (one thread per connection), the tpproxy
# binary in front of it, haproxy (TCP, 1:1) in front of it when installed,
# and a second private MariaDB with its own thread pool
# (thread_handling=pool-of-threads) on the same data; a short comparison
# of the four with a report. Extra arguments go to `tpbench demo` (e.g.
# --duration 30s --out DIR --haproxy off --pool-of-threads-size 4).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
go build -o bin/ ./cmd/...
exec ./bin/tpbench demo "$@"
