#!/usr/bin/env bash
# Installs what tpproxy's tests and demo need on Debian/Ubuntu: a MariaDB
# server and client, sysbench, haproxy (the demo's bare-relay peer), and
# PyMySQL for the system python3; with the
# argument "tests" also Chromium (headless, for the report.html test) and the
# client drivers of e2e/drivers: PHP (mysqli, PDO_mysql), mysqlclient
# (MySQLdb) for the system python3, MariaDB Connector/J plus a JDK, Node
# with the npm packages locked in e2e/drivers/node (npm ci), and iproute2 and
# iptables for the demo over delayed network tiers.
# Idempotent: installs only what is missing.
set -euo pipefail

need=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || command -v mysqld >/dev/null 2>&1 || [ -x /usr/sbin/mysqld ] || need+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || command -v mysql >/dev/null 2>&1 || need+=(mariadb-client)
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
/usr/bin/python3 -c 'import pymysql' >/dev/null 2>&1 || need+=(python3-pymysql)
if [ "${1:-}" = "tests" ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v php >/dev/null 2>&1 || need+=(php-cli)
  php -r 'exit(extension_loaded("mysqli") && extension_loaded("pdo_mysql") ? 0 : 1);' >/dev/null 2>&1 || need+=(php-mysql)
  /usr/bin/python3 -c 'import MySQLdb' >/dev/null 2>&1 || need+=(python3-mysqldb)
  [ -f /usr/share/java/mariadb-java-client.jar ] || need+=(libmariadb-java)
  command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
  command -v node >/dev/null 2>&1 || need+=(nodejs)
  command -v npm >/dev/null 2>&1 || need+=(npm)
  # The demo over 0.2 ms tiers (cmd/tpbench TestDemoOverTiers): network
  # namespaces, and NFQUEUE rules where the kernel has no netem.
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  command -v iptables-legacy >/dev/null 2>&1 || command -v iptables >/dev/null 2>&1 || need+=(iptables)
fi

# npm ci for e2e/drivers/node once node and npm are there (below, after apt).
node_deps() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/e2e/drivers/node"
  if [ "${1:-}" = "tests" ] && [ -f "$dir/package-lock.json" ] && [ ! -d "$dir/node_modules" ] && command -v npm >/dev/null 2>&1; then
    echo "setup: npm ci in e2e/drivers/node" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
}

if [ ${#need[@]} -eq 0 ]; then
  node_deps "${1:-}"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "setup: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The distribution's service is not needed: tests and the demo start
# private servers of their own.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mariadb 2>/dev/null; then
  $sudo systemctl stop mariadb || true
fi
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet haproxy 2>/dev/null; then
  $sudo systemctl stop haproxy || true
fi
node_deps "${1:-}"
