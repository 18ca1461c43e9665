#!/usr/bin/env bash
# Re-run the MariaDB actor tests many times under full CPU load and print the tally: a
# flaky mock-clock test (the autojump clock moving while a query is in flight) shows up
# here long before it shows up in CI.
#
#   deploy/stress/mariadb-actor-tests.sh [ROUNDS] [PYTEST ARGS...]
#
# ROUNDS defaults to 30; the pytest arguments default to `tests/actors -k mariadb`. The
# load is `stress-ng --cpu N` (N = all cores; EXPORT_CENTER_STRESS_ARGS replaces these
# arguments, e.g. "--cpu 2 --io 1" to add sync() storms) when stress-ng is installed, else
# one busy shell loop per core; it is stopped when the script ends, however it ends. MariaDB is
# started for the duration if it is not running (deploy/services.sh). Every round runs
# whatever happens to the previous one; a failed round's output is kept in a log file.
# Exit status 0 only if every round passed.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -z "${_STRESS_INSIDE:-}" ]; then
  export _STRESS_INSIDE=1
  EXPORT_CENTER_SERVICES=mariadb exec deploy/services.sh run "$0" "$@"
fi

ROUNDS=30
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  ROUNDS=$1
  shift
fi
[ $# -gt 0 ] || set -- tests/actors -k mariadb
PYTHON=${EXPORT_CENTER_VENV:-.venv}/bin/python
CORES=$(nproc)
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/export-center-stress.XXXXXX")

LOAD_PIDS=()
stop_load() {
  local pid
  for pid in "${LOAD_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${LOAD_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  LOAD_PIDS=()
}
trap stop_load EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if command -v stress-ng >/dev/null 2>&1; then
  read -ra stress_args <<<"${EXPORT_CENTER_STRESS_ARGS:---cpu $CORES}"
  stress-ng "${stress_args[@]}" --quiet &
  LOAD_PIDS+=("$!")
  load="stress-ng ${stress_args[*]}"
else
  for _ in $(seq "$CORES"); do
    (while :; do :; done) &
    LOAD_PIDS+=("$!")
  done
  load="$CORES busy shell loops"
fi
echo "stress: $ROUNDS rounds of pytest $* under $load; logs in $LOGS" >&2

passed=0
load_min=""
load_max=""
for round in $(seq "$ROUNDS"); do
  log="$LOGS/round-$round.log"
  rc=0
  "$PYTHON" -m pytest -q -p no:cacheprovider -m "not rocketmq" "$@" >"$log" 2>&1 || rc=$?
  one_min=$(cut -d' ' -f1 /proc/loadavg)
  load_min=$(awk -v a="${load_min:-$one_min}" -v b="$one_min" 'BEGIN { print (b < a ? b : a) }')
  load_max=$(awk -v a="${load_max:-$one_min}" -v b="$one_min" 'BEGIN { print (b > a ? b : a) }')
  result=$(tail -n 1 "$log" | tr -d '=' | sed 's/^ *//; s/ *$//')
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1))
    rm -f "$log"
    echo "round $round/$ROUNDS: $result (load average $one_min)"
  else
    echo "round $round/$ROUNDS: FAILED: $result (load average $one_min; output: $log)"
  fi
done
stop_load
rmdir "$LOGS" 2>/dev/null || true # no failed round: no logs to keep
echo "stress: $passed of $ROUNDS rounds passed under $load on $CORES cores;" \
  "1-minute load average $load_min to $load_max"
[ "$passed" = "$ROUNDS" ]
