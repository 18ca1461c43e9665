#!/usr/bin/env bash
# A throwaway MariaDB for tests and development, on loopback only.
#
#   deploy/mariadb/server.sh start    install if missing, init a data dir, start, create db+user
#   deploy/mariadb/server.sh stop     stop the server started here (by pid)
#   deploy/mariadb/server.sh url      print the FILE_EXPORT_DATABASE_URL for it
#
# Environment: EXPORT_CENTER_MARIADB_DIR (default ${TMPDIR:-/tmp}/export-center-mariadb),
# EXPORT_CENTER_MARIADB_PORT (default 3307). The data dir is disposable.
set -euo pipefail

DIR=${EXPORT_CENTER_MARIADB_DIR:-${TMPDIR:-/tmp}/export-center-mariadb}
PORT=${EXPORT_CENTER_MARIADB_PORT:-3307}
SOCK="$DIR/mysqld.sock"
PIDFILE="$DIR/mysqld.pid"
DB=export_center
USER_NAME=export_center
PASSWORD=export_center

url() { echo "mysql://$USER_NAME:$PASSWORD@127.0.0.1:$PORT/$DB"; }

# Alive and still mariadbd: after a reboot or a killed session the pid may be reused.
running() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q mariadbd
}

install_server() {
  if command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; then return; fi
  echo "server.sh: installing mariadb-server from the distribution's packages ..." >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "server.sh: mariadb-server is missing and installing it needs root" >&2
    exit 2
  fi
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
}

start() {
  if ! running; then
    launch
  fi
  provision
  echo "server.sh: MariaDB ready at $(url)" >&2
}

launch() {
  install_server
  export PATH="$PATH:/usr/sbin"
  mkdir -p "$DIR"
  if [ ! -d "$DIR/data/mysql" ]; then
    mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$DIR/data" \
      --auth-root-authentication-method=socket --skip-test-db >"$DIR/install.log" 2>&1 \
      || { cat "$DIR/install.log" >&2; exit 1; }
  fi
  mariadbd --no-defaults --user="$(id -un)" --datadir="$DIR/data" --socket="$SOCK" \
    --port="$PORT" --bind-address=127.0.0.1 --pid-file="$PIDFILE" --skip-log-bin \
    --innodb-buffer-pool-size=64M --innodb-log-file-size=48M --max-connections=200 \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    --log-error="$DIR/error.log" >/dev/null 2>&1 &
  for _ in $(seq 1 100); do
    if mariadb-admin --no-defaults --socket="$SOCK" -uroot ping >/dev/null 2>&1; then break; fi
    sleep 0.2
  done
  mariadb-admin --no-defaults --socket="$SOCK" -uroot ping >/dev/null 2>&1 \
    || { echo "server.sh: MariaDB did not start; see $DIR/error.log" >&2
         tail -20 "$DIR/error.log" >&2; exit 1; }
}

provision() {
  export PATH="$PATH:/usr/sbin"
  mariadb --no-defaults --socket="$SOCK" -uroot <<SQL
CREATE DATABASE IF NOT EXISTS $DB CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS '$USER_NAME'@'127.0.0.1' IDENTIFIED BY '$PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$USER_NAME'@'127.0.0.1';
FLUSH PRIVILEGES;
SQL
}

stop() {
  if ! running; then return; fi
  local pid; pid=$(cat "$PIDFILE")
  kill "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) url ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
