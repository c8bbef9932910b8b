#!/usr/bin/env bash
# Installs what tpproxy's tests and demo need on Debian/Ubuntu: a MariaDB
# server and client, sysbench, and PyMySQL for the system python3; with the
# argument "tests" also Chromium (headless, for the report.html test).
# Idempotent: installs only what is missing.
set -euo pipefail

need=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || command -v mysqld >/dev/null 2>&1 || [ -x /usr/sbin/mysqld ] || need+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || command -v mysql >/dev/null 2>&1 || need+=(mariadb-client)
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
/usr/bin/python3 -c 'import pymysql' >/dev/null 2>&1 || need+=(python3-pymysql)
if [ "${1:-}" = "tests" ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi

if [ ${#need[@]} -eq 0 ]; then
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
