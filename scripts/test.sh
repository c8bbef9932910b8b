#!/usr/bin/env bash
# Runs tpproxy's whole test suite: setup, vet, race-enabled tests against
# private MariaDB servers the tests start themselves, the Helm chart's tests
# (deploy/), then a short run of
# every fuzz target. Set FUZZTIME (default 20000x executions per target) to
# fuzz longer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh tests
go vet ./...
# The semantics suite times its noise sessions: it runs on its own after
# the rest, not beside the driver matrix's JVM, PHP and Node processes.
go test -race -count=1 -timeout 30m $(go list ./... | grep -v '/e2e/semantics$')
SEMANTICS_BUDGET="${SEMANTICS_BUDGET:-12m}" go test -race -count=1 -timeout 20m ./e2e/semantics/
# Three tpbench shards merged against one process: their TPS compares only
# on a machine nothing else loads, so after the rest, alone, without -race.
TPBENCH_QUIET_MACHINE=1 go test -count=1 -timeout 5m -run '^TestShardedRampMatchesSingle$' ./bench/
# The delayed network tiers (root; namespaces, NFQUEUE or netem) and the
# demo over them time round trips: alone too, one package at a time.
# The handshake flood bounds honest statements' latency, the idle pinned
# sessions writers' throughput, the CPU-bound autosize test judges
# throughput: alone, without -race, too.
TPBENCH_QUIET_MACHINE=1 go test -p 1 -count=1 -timeout 6m -run '^(TestTiersDelayEveryLink|TestDemoOverTiers)$' ./bench/internal/tiers/ ./cmd/tpbench/
# Under -race the sockets' direct reads and writes go through package
# syscall (internal/netx/direct_race.go): the raw system calls that
# production builds make are tested here, and by the e2e packages that
# build the tpproxy binary.
go test -count=1 -timeout 5m ./internal/netx/ ./proxy/
TPBENCH_QUIET_MACHINE=1 go test -count=1 -timeout 3m -run '^(TestHandshakeFloodKeepsHonestLatency|TestAutoSizeStopsWhereTheServerQueues)$' ./e2e/operate/
TPBENCH_QUIET_MACHINE=1 go test -count=1 -timeout 3m -run '^TestIdlePinnedSessionsLeaveOthersTheirShare$/^autocommit' ./e2e/clients/
# The Helm chart's tests are a module of their own (deploy/go.mod), so that
# Helm's and the Kubernetes libraries' dependencies stay out of tpproxy's;
# ./... above does not reach them. They render the chart in-process and run
# the real check-config (a build of ./cmd/tpproxy) on what it renders.
(cd deploy && go vet ./... && go test -count=1 -timeout 5m ./...)

# A count, not a duration: with a duration Go 1.26's fuzz coordinator can
# report a bare "context deadline exceeded" at the deadline with no failing
# input (golang/go#75804, fixed in Go 1.27).
fuzztime="${FUZZTIME:-20000x}"
while read -r pkg target; do
  echo "fuzz: $pkg $target ($fuzztime)"
  if ! out=$(go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg" 2>&1); then
    echo "$out" | grep -v '^fuzz: elapsed' >&2
    exit 1
  fi
done <<'TARGETS'
./proxy/internal/sqlscan FuzzScan
./proxy/internal/sqlscan FuzzScanMode
./proxy/internal/sqlscan FuzzInsertFixes
./proxy/internal/sqlscan FuzzSplit
./proxy/internal/sqlscan FuzzBodySetsSession
./internal/mysqlwire FuzzParseOK
./internal/mysqlwire FuzzParseERR
./internal/mysqlwire FuzzReader
./internal/mysqlwire FuzzParseExecute
./internal/mysqlwire FuzzCompressRead
./proxy FuzzParseHandshakeResponse
./proxy FuzzParseChangeUser
./admin FuzzParse
./admin FuzzEngine
./admin FuzzHandshake
./bench/internal/sysstat FuzzNodeExporter
./bench/internal/sysstat FuzzProcParsers
./internal/mysqlclient FuzzReadResult
./internal/mysqlclient FuzzHandshake
TARGETS
echo "all tests passed"
