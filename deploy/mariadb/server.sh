#!/usr/bin/env bash
# A throwaway MariaDB for tests and development, on loopback only.
#
#   deploy/mariadb/server.sh start    install if missing, init a data dir, start, create db+user
#   deploy/mariadb/server.sh stop     stop the server started here (by pid)
#   deploy/mariadb/server.sh url      print the FILE_EXPORT_DATABASE_URL for it
#   deploy/mariadb/server.sh running  print "mariadbd" when the server started here runs
#   deploy/mariadb/server.sh dir      print the data dir (deploy/services.sh keeps its notes there)
#
# Environment: EXPORT_CENTER_MARIADB_DIR (default ${TMPDIR:-/tmp}/export-center-mariadb),
# EXPORT_CENTER_MARIADB_PORT (default 3307). The data dir is disposable. The server keeps
# running until `stop`; `deploy/dev test` stops it afterwards only if that run started it.
set -euo pipefail

DIR=${EXPORT_CENTER_MARIADB_DIR:-${TMPDIR:-/tmp}/export-center-mariadb}
PORT=${EXPORT_CENTER_MARIADB_PORT:-3307}
SOCK="$DIR/mysqld.sock"
PIDFILE="$DIR/mysqld.pid"
DB=export_center
USER_NAME=export_center
PASSWORD=export_center

SETSID=$(command -v setsid || true)

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

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

launch() {
  install_server
  export PATH="$PATH:/usr/sbin"
  if port_open "$PORT"; then
    echo "server.sh: port $PORT is in use by a process this script did not start" \
      "(set EXPORT_CENTER_MARIADB_PORT, or EXPORT_CENTER_MARIADB_DIR to its data dir)" >&2
    exit 1
  fi
  mkdir -p "$DIR"
  if [ ! -d "$DIR/data/mysql" ]; then
    mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$DIR/data" \
      --auth-root-authentication-method=socket --skip-test-db >"$DIR/install.log" 2>&1 \
      || { cat "$DIR/install.log" >&2; exit 1; }
  fi
  # its own session (setsid): Ctrl-C or a kill of the process group that started it (a
  # test run) must not reach a server that other runs may share; it stops only by `stop`.
  $SETSID mariadbd --no-defaults --user="$(id -un)" --datadir="$DIR/data" --socket="$SOCK" \
    --port="$PORT" --bind-address=127.0.0.1 --pid-file="$PIDFILE" --skip-log-bin \
    --innodb-buffer-pool-size=64M --innodb-log-file-size=48M --max-connections=200 \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    --log-error="$DIR/error.log" >/dev/null 2>&1 &
  # mariadbd writes this file itself only once it is initialised; written now, `running`
  # and `stop` find a server whose start was cut short (setsid execs: $! is mariadbd).
  echo $! >"$PIDFILE"
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
  export PATH="$PATH:/usr/sbin"
  if ! mariadb-admin --no-defaults --socket="$SOCK" -uroot ping >/dev/null 2>&1; then
    # not answering: still starting (mariadbd can hang on a SIGTERM received during
    # start-up) or hung; the data dir is disposable and InnoDB recovers anyway
    kill -9 "$pid" 2>/dev/null || true
  else
    kill "$pid"
  fi
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) url ;;
  running) if running; then echo mariadbd; fi ;;
  dir) echo "$DIR" ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
