#!/usr/bin/env bash
# The real servers the tests need (MariaDB, RocketMQ; S3Proxy on request), shared by every
# test run on a machine.
#
#   deploy/services.sh run CMD [ARG...]  start what is missing, run CMD, then stop what a
#                                        test run started, unless another run still uses it
#   deploy/services.sh start             start them and keep them (faster re-runs)
#   deploy/services.sh stop              stop them (refused while a test run uses them)
#   deploy/services.sh status            what runs, who started it, which runs use it
#
# `run` (used by `deploy/dev test`) leaves running what was already running before it and
# stops what it started, on success, failure, Ctrl-C or SIGTERM, then says which in one
# line. Several runs may overlap: each registers itself, and the last one to finish stops
# what a test run started. A run killed with SIGKILL leaves its servers running; the next
# run adopts and stops them.
#
# Environment:
#   EXPORT_CENTER_SERVICES       which servers, default "mariadb rocketmq s3" (s3: an
#                                S3-compatible object store, deploy/s3/server.sh)
#   EXPORT_CENTER_KEEP_SERVICES  1: `run` starts what is missing and keeps everything running
#   and the servers' own settings (deploy/mariadb/server.sh, deploy/rocketmq/broker.sh).
#
# Notes live in each server's own directory (`server.sh dir`, `broker.sh dir`):
# test-runs/<pid> for each run using it, test-runs/started for the parts a test run
# started; test-runs.lock serialises starts and stops across runs (flock).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"

SERVICES=${EXPORT_CENTER_SERVICES:-mariadb rocketmq s3}

script_of() {
  case "$1" in
    mariadb) echo "$HERE/mariadb/server.sh" ;;
    rocketmq) echo "$HERE/rocketmq/broker.sh" ;;
    s3) echo "$HERE/s3/server.sh" ;;
    *)
      echo "services.sh: unknown service '$1' in EXPORT_CENTER_SERVICES (mariadb, rocketmq, s3)" >&2
      exit 2
      ;;
  esac
}

label_of() {
  case "$1" in
    mariadb) echo MariaDB ;;
    rocketmq) echo RocketMQ ;;
    s3) echo "S3 (S3Proxy)" ;;
  esac
}

notes_dir() { echo "$("$(script_of "$1")" dir)/test-runs"; }

# Run "$@" holding the lock of service $SVC's notes (serialises start/stop across runs).
# "$@" runs with fd 9 closed: a server it starts must not inherit the lock and hold it.
with_lock() {
  local dir
  dir=$(notes_dir "$SVC")
  mkdir -p "$dir"
  if command -v flock >/dev/null 2>&1; then
    (
      if ! flock -n 9; then
        echo "services.sh: waiting for another test run to start or stop $(label_of "$SVC")" >&2
        flock 9
      fi
      "$@" 9>&-
    ) 9>"$dir.lock"
  else
    "$@"
  fi
}

# pids of live runs registered for $SVC, other than $1; forgets dead runs unless $2 = keep
other_runs() {
  local dir f pid
  dir=$(notes_dir "$SVC")
  for f in "$dir"/[0-9]*; do
    [ -e "$f" ] || continue
    [[ "$f" != *.before ]] || continue
    pid=${f##*/}
    [ "$pid" != "$1" ] || continue
    # alive and still this script: a pid reused by another program does not count
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
      grep -q 'services\.sh'; then
      echo "$pid"
    elif [ "${2:-}" != keep ]; then
      # a run that died without cleaning up (SIGKILL): note what it may have started
      note_started "$pid"
      rm -f "$f"
    fi
  done
}

# the server parts (namesrv, broker, mariadbd) test runs started, from notes dir $1
started_parts() {
  if [ -f "$1/started" ]; then sort -u "$1/started" | tr '\n' ' '; fi
}

# words of $1 that are not in $2
minus() {
  local w out=()
  for w in $1; do [[ " $2 " == *" $w "* ]] || out+=("$w"); done
  echo "${out[*]:-}"
}

# -- one service ($SVC) -------------------------------------------------------------------

hold() { # $1 = pid of this run
  local script dir rc=0
  script=$(script_of "$SVC")
  dir=$(notes_dir "$SVC")
  : >"$dir/$1"
  # What ran before the start, until the start is noted: a start cut short (failed, or
  # Ctrl-C half-way) still lets release find what it started.
  "$script" running >"$dir/$1.before"
  "$script" start || rc=$?
  note_started "$1"
  return "$rc"
}

# Note as started by a test run what runs now and did not before run $1 began its start.
note_started() {
  local dir started
  dir=$(notes_dir "$SVC")
  [ -f "$dir/$1.before" ] || return 0
  started=$(minus "$("$(script_of "$SVC")" running)" "$(cat "$dir/$1.before")")
  if [ -n "$started" ]; then
    echo "$started" >>"$dir/started"
    echo "$1" >"$dir/started-by"
  fi
  rm -f "$dir/$1.before"
}

release() { # $1 = pid of this run; prints what happened, for the summary line
  local script dir label others started starter
  script=$(script_of "$SVC")
  dir=$(notes_dir "$SVC")
  label=$(label_of "$SVC")
  note_started "$1" # when the start was cut short
  rm -f "$dir/$1"
  others=$(other_runs "$1" | tr '\n' ' ')
  started=$(started_parts "$dir")
  starter=$(cat "$dir/started-by" 2>/dev/null || true)
  if [ -z "${started// /}" ]; then
    echo "left $label running: it was already running"
  elif [ -n "${others// /}" ]; then
    echo "left $label running: test run ${others% } still uses it and will stop it"
  else
    # shellcheck disable=SC2086 # one word per server part
    if ! "$script" stop $started >"$dir/stop.log" 2>&1; then
      echo "could not stop $label (${started% }): see $dir/stop.log"
      return
    fi
    rm -f "$dir/started" "$dir/started-by" "$dir/stop.log"
    if [ "$starter" = "$1" ]; then
      echo "stopped $label that this run started"
    else
      echo "stopped $label that an earlier test run started"
    fi
  fi
}

keep() {
  local script
  script=$(script_of "$SVC")
  "$script" start
  rm -f "$(notes_dir "$SVC")/started" "$(notes_dir "$SVC")/started-by"
}

stop_kept() {
  local others
  others=$(other_runs none | tr '\n' ' ')
  if [ -n "${others// /}" ]; then
    echo "services.sh: not stopping $(label_of "$SVC"): test run ${others% } uses it" >&2
    return 1
  fi
  "$(script_of "$SVC")" stop
  rm -f "$(notes_dir "$SVC")/started" "$(notes_dir "$SVC")/started-by"
}

status_one() {
  local dir running others started
  dir=$(notes_dir "$SVC")
  running=$("$(script_of "$SVC")" running)
  others=$(other_runs none keep | tr '\n' ' ')
  started=$(started_parts "$dir")
  printf '%s: %s' "$(label_of "$SVC")" "${running:+running ($running)}"
  [ -n "$running" ] || printf 'stopped'
  if [ -n "$running" ]; then
    if [ -n "${started// /}" ]; then
      printf '; started by a test run (%s), stopped by the last run to finish' "${started% }"
    else
      printf '; kept (stop it with deploy/dev services stop)'
    fi
  fi
  [ -z "${others// /}" ] || printf '; used by test run %s' "${others% }"
  echo
}

# -- commands -----------------------------------------------------------------------------

# Labels of the services in $SERVICES, joined with "and".
labels() {
  local svc joined=""
  for svc in $SERVICES; do joined+="${joined:+ and }$(label_of "$svc")"; done
  echo "$joined"
}

# One line from the release lines of the services ($SERVICES order): two lines that say
# the same of two servers become one ("stopped MariaDB and RocketMQ that this run started").
summary() {
  if [ $# = 2 ]; then
    local -a svcs
    read -ra svcs <<<"$SERVICES"
    local l1 l2 a b
    l1=$(label_of "${svcs[0]}")
    l2=$(label_of "${svcs[1]}")
    a=${1/$l1/@}
    b=${2/$l2/@}
    if [ "$a" = "$b" ]; then
      a=${a/@/$l1 and $l2}
      a=${a/it was already/they were already}
      echo "${a/uses it and will stop it/uses them and will stop them}"
      return
    fi
  fi
  local IFS=';' all
  all="$*"
  echo "${all//;/; }"
}

cmd_run() {
  [ $# -gt 0 ] || { echo "services.sh: run needs a command" >&2; exit 2; }
  local svc
  if [ "${EXPORT_CENTER_KEEP_SERVICES:-}" = 1 ]; then
    for svc in $SERVICES; do SVC=$svc with_lock keep; done
    local rc=0
    "$@" || rc=$?
    echo "services.sh: kept $(labels) running (EXPORT_CENTER_KEEP_SERVICES=1);" \
      "stop with: deploy/dev services stop" >&2
    exit "$rc"
  fi
  HELD=()
  trap on_exit EXIT
  # Ctrl-C reaches CMD as well (same process group); these traps run once CMD has ended.
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  for svc in $SERVICES; do
    HELD+=("$svc") # before hold: a start that fails half-way is still cleaned up
    SVC=$svc with_lock hold $$
  done
  "$@"
}

on_exit() {
  local rc=$? svc lines=()
  trap - EXIT INT TERM HUP
  trap '' INT # a second Ctrl-C must not cut the clean-up short
  for svc in "${HELD[@]}"; do
    lines+=("$(SVC=$svc with_lock release $$)")
  done
  [ "${#lines[@]}" = 0 ] || echo "services.sh: $(summary "${lines[@]}")" >&2
  exit "$rc"
}

cmd_start() {
  local svc
  for svc in $SERVICES; do SVC=$svc with_lock keep; done
  echo "services.sh: $(labels) keep running until: deploy/dev services stop" >&2
}

cmd_stop() {
  local svc rc=0
  for svc in $SERVICES; do SVC=$svc with_lock stop_kept || rc=1; done
  exit "$rc"
}

cmd_status() {
  local svc
  for svc in $SERVICES; do SVC=$svc status_one; done
}

for svc in $SERVICES; do script_of "$svc" >/dev/null; done # exits on an unknown name

case "${1:-}" in
  run)
    shift
    cmd_run "$@"
    ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *)
    sed -n '2,8p' "$0" >&2
    exit 2
    ;;
esac
