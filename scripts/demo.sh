#!/usr/bin/env bash
# The demo: a private MariaDB, tpproxy in front of it, and a short
# before/after comparison (direct vs through the proxy) with a report.
# Extra arguments go to `tpbench demo` (e.g. --duration 30s --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
go build -o bin/ ./cmd/...
exec ./bin/tpbench demo "$@"
