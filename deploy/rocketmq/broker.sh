#!/usr/bin/env bash
# A real RocketMQ 5.3.1 (NameServer + one broker) on loopback for developers and tests.
#
#   deploy/rocketmq/broker.sh start       fetch jars if needed, start both servers, provision
#   deploy/rocketmq/broker.sh stop [namesrv|broker ...]
#                                         stop both servers, or the ones named (SIGTERM,
#                                         then SIGKILL)
#   deploy/rocketmq/broker.sh status      exit 0 when both run and the broker is registered
#   deploy/rocketmq/broker.sh provision   create the topics and groups for $MQ_TOPIC_PREFIX
#                                         (deploy/rocketmq/init-topics.sh, as in production)
#   deploy/rocketmq/broker.sh deprovision delete the topics and groups of $MQ_TOPIC_PREFIX
#                                         (a test session's own prefix, at its end)
#   deploy/rocketmq/broker.sh sweep       deprovision test-session prefixes older than
#                                         ROCKETMQ_SWEEP_HOURS (a session that was killed)
#   deploy/rocketmq/broker.sh running     print which of "namesrv broker" run (no JVM: quick)
#   deploy/rocketmq/broker.sh dir         print the run dir (deploy/services.sh keeps notes there)
#
# The servers keep running until `stop`; `deploy/dev test` stops them afterwards only if
# that run started them.
#
# No Docker: the servers run from the Maven Central jars of the seed's version (§16.1 runs
# the official apache/rocketmq:5.3.1 image in production, configured by
# broker.conf.template + render-broker-config.sh, not by this script). Needs java 17+ and,
# on first use, mvn. Tests only: the delay levels are shortened to 1 s (see write_configs).
#
# Environment (all optional):
#   MQ_TOPIC_PREFIX        topic/group prefix (§6.2); default "test-" when unset (an
#                          explicit empty value provisions the unprefixed names)
#   ROCKETMQ_CACHE_DIR     jar cache, default ${XDG_CACHE_HOME:-$HOME/.cache}/export-center/
#                          rocketmq-5.3.1 (about 100 MB; never inside the repository)
#   ROCKETMQ_RUN_DIR       configs, pid files, logs and store; default
#                          ${TMPDIR:-/tmp}/export-center-rocketmq
#   ROCKETMQ_START_TIMEOUT seconds to wait for each server to become ready (default 120)
#   ROCKETMQ_WORKER_RETRY_MAX_TIMES       broker retryMaxTimes, worker group (default 16)
#   ROCKETMQ_DLQ_HANDLER_RETRY_MAX_TIMES  same for the DLQ handler group (default 2^31-1)
#   ROCKETMQ_NAMESRV_FALLBACK_VERSIONS    NameServer versions to try when the repository
#                          lacks rocketmq-namesrv 5.3.1 (default 5.3.3; see fetch_jars)
#   ROCKETMQ_NAMESRV_PORT  NameServer port (default 9876)
#   ROCKETMQ_BROKER_PORT   broker listen port (default 10911)
#   ROCKETMQ_SWEEP_HOURS   age after which `sweep` deletes a test session's prefix (default 24)
#
# Ports (loopback only): NameServer 9876, broker 10911 plus 10909 (fast remoting = listen
# port - 2) and 10912 (HA = listen port + 1). A second dev broker beside the first needs
# other ports and another ROCKETMQ_RUN_DIR.
set -euo pipefail

readonly ROCKETMQ_VERSION=5.3.1
HERE="$(cd "$(dirname "$0")" && pwd)"
readonly NAMESRV_PORT=${ROCKETMQ_NAMESRV_PORT:-9876}
readonly BROKER_PORT=${ROCKETMQ_BROKER_PORT:-10911}
readonly NAMESRV_ADDR="127.0.0.1:${NAMESRV_PORT}"
readonly BROKER_ADDR="127.0.0.1:${BROKER_PORT}"
readonly CLUSTER_NAME=ExportCenterDevCluster
readonly BROKER_NAME=export-center-dev-broker
SETSID=$(command -v setsid || true) # servers get a session of their own (see rmq_java)

CACHE_DIR=${ROCKETMQ_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/export-center/rocketmq-${ROCKETMQ_VERSION}}
RUN_DIR=${ROCKETMQ_RUN_DIR:-${TMPDIR:-/tmp}/export-center-rocketmq}
PREFIX=${MQ_TOPIC_PREFIX-test-}
START_TIMEOUT=${ROCKETMQ_START_TIMEOUT:-120}
# The application dead-letters poison commands itself after maxReconsumeTimes = 2 (§8.1):
# the broker's own DLQ branch is not trusted with the old native client (docs/rocketmq.md), so
# the broker's limit must stay well above the application's and never be reached first.
WORKER_RETRY_MAX_TIMES=${ROCKETMQ_WORKER_RETRY_MAX_TIMES:-16}
# §9.4.3: the DLQ handler retries its database work without limit and must never reach a
# second-level DLQ; the broker's largest value stands in for Integer.MAX_VALUE.
DLQ_HANDLER_RETRY_MAX_TIMES=${ROCKETMQ_DLQ_HANDLER_RETRY_MAX_TIMES:-2147483647}

LIB_DIR="$CACHE_DIR/lib"
NAMESRV_LIB_DIR="$CACHE_DIR/namesrv-lib"
# tried in order when rocketmq-namesrv $ROCKETMQ_VERSION cannot be fetched (see fetch_jars)
NAMESRV_FALLBACK_VERSIONS=${ROCKETMQ_NAMESRV_FALLBACK_VERSIONS:-5.3.3}

die() {
  echo "broker.sh: $*" >&2
  exit 1
}

log() {
  echo "broker.sh: $*" >&2
}

require_tools() {
  command -v java >/dev/null 2>&1 || die "java (17 or newer) is required on PATH"
  command -v mvn >/dev/null 2>&1 || [ -f "$LIB_DIR/.complete" ] ||
    die "mvn is required to fetch the RocketMQ jars (or pre-fill $LIB_DIR)"
}

# The jars (fetch_jars) and the server configuration (write_configs): broker-install.sh.
# shellcheck source=deploy/rocketmq/broker-install.sh
. "$HERE/broker-install.sh"

# java for one RocketMQ server; $1 = lib dir, $2 = logback resource, $3 = heap (small: about
# 128 MB for the NameServer, 512 MB for the broker), rest = main class + arguments
rmq_java() {
  local lib=$1 logback=$2 heap=$3
  shift 3
  # rocketmq.home.dir must name an existing directory or both servers exit; user.home
  # keeps their logs ($user.home/logs/rocketmqlogs) under the run directory. Always called
  # with "&": exec makes the background job the JVM itself, so $! is the pid to stop
  # (setsid execs too). Its own session: Ctrl-C or a kill of the process group that
  # started it (a test run) must not reach a server that other runs may share.
  exec $SETSID java -server "-Xms$heap" "-Xmx$heap" -XX:+UseSerialGC -XX:-OmitStackTraceInFastThrow \
    "-Drocketmq.home.dir=$RUN_DIR/home" "-Duser.home=$RUN_DIR/home" \
    "-Drmq.logback.configurationFile=$logback" \
    -cp "$lib/*" "$@"
}

admin() {
  # Tiered level 1 halves the admin tool's start-up; it runs one short command per JVM.
  java -Xms64m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    "-Duser.home=$RUN_DIR/home" "-Drmq.logback.configurationFile=rmq.tools.logback.xml" \
    -cp "$LIB_DIR/*" org.apache.rocketmq.tools.command.MQAdminStartup "$@" 2>&1
}

# -- processes --------------------------------------------------------------------------

# pid from $1.pid when that process is alive and still runs main class $2
running_pid() {
  local pidfile="$RUN_DIR/$1.pid" pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$2"; then
    echo "$pid"
    return 0
  fi
  rm -f "$pidfile" # stale: the process is gone or the pid was reused
  return 1
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait until file $2 contains $3 while pid $1 lives; $4 = what, for messages
wait_for_log() {
  local pid=$1 file=$2 pattern=$3 what=$4 waited=0
  while ! grep -q "$pattern" "$file" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$file" >&2 || true
      die "$what exited during start-up (output: $file)"
    fi
    if [ "$waited" -ge $((START_TIMEOUT * 5)) ]; then
      tail -n 40 "$file" >&2 || true
      die "$what not ready after ${START_TIMEOUT}s (output: $file)"
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
}

start_namesrv() {
  if running_pid namesrv NamesrvStartup >/dev/null; then
    return
  fi
  port_open "$NAMESRV_PORT" && die "port $NAMESRV_PORT is in use by a process this script did not start"
  log "starting NameServer on $NAMESRV_ADDR"
  : >"$RUN_DIR/namesrv.out"
  rmq_java "$NAMESRV_LIB_DIR" rmq.namesrv.logback.xml 128m org.apache.rocketmq.namesrv.NamesrvStartup \
    -c "$RUN_DIR/namesrv.conf" >"$RUN_DIR/namesrv.out" 2>&1 </dev/null &
  echo $! >"$RUN_DIR/namesrv.pid"
  STARTED+=(namesrv)
  wait_for_log "$!" "$RUN_DIR/namesrv.out" "The Name Server boot success" "NameServer"
}

start_broker() {
  if running_pid broker BrokerStartup >/dev/null; then
    return
  fi
  local port
  for port in "$BROKER_PORT" $((BROKER_PORT - 2)) $((BROKER_PORT + 1)); do
    port_open "$port" && die "port $port is in use by a process this script did not start"
  done
  log "starting broker on $BROKER_ADDR"
  : >"$RUN_DIR/broker.out"
  rmq_java "$LIB_DIR" rmq.broker.logback.xml 512m org.apache.rocketmq.broker.BrokerStartup \
    -c "$RUN_DIR/broker.conf" >"$RUN_DIR/broker.out" 2>&1 </dev/null &
  echo $! >"$RUN_DIR/broker.pid"
  STARTED+=(broker)
  wait_for_log "$!" "$RUN_DIR/broker.out" "boot success" "broker"
}

# "boot success" is not enough: clients need the broker registered at the NameServer.
wait_for_cluster() {
  local deadline=$((SECONDS + START_TIMEOUT)) out
  while :; do
    out=$(admin clusterList -n "$NAMESRV_ADDR" || true)
    if grep -q "$CLUSTER_NAME" <<<"$out" && grep -q "$BROKER_NAME" <<<"$out"; then
      return
    fi
    [ "$SECONDS" -lt "$deadline" ] || {
      echo "$out" >&2
      die "broker not listed by clusterList after ${START_TIMEOUT}s"
    }
    sleep 0.5
  done
}

stop_one() {
  local name=$1 main=$2 pid waited=0
  if ! pid=$(running_pid "$name" "$main"); then
    log "$name is not running"
    return
  fi
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$waited" -ge 150 ]; then # 30 s
      log "$name did not stop after 30s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
  rm -f "$RUN_DIR/$name.pid"
}

# -- provisioning -------------------------------------------------------------------------

# The topic set-up production runs (deploy/rocketmq/init-topics.sh, the compose topic-init
# service), against this loopback cluster, with the admin tool from the jar cache.
provision() {
  ROCKETMQ_NAMESRV_ADDR="$NAMESRV_ADDR" ROCKETMQ_CLUSTER="$CLUSTER_NAME" \
    MQ_TOPIC_PREFIX="$PREFIX" \
    ROCKETMQ_WORKER_RETRY_MAX_TIMES="$WORKER_RETRY_MAX_TIMES" \
    ROCKETMQ_DLQ_HANDLER_RETRY_MAX_TIMES="$DLQ_HANDLER_RETRY_MAX_TIMES" \
    ROCKETMQ_INIT_TIMEOUT="$START_TIMEOUT" \
    ROCKETMQ_ADMIN_CLASSPATH="$LIB_DIR" ROCKETMQ_ADMIN_HOME="$RUN_DIR/home" \
    TMPDIR="$RUN_DIR" "$HERE/init-topics.sh" || die "provisioning of prefix '${PREFIX}' failed"
}

# -- removing test sessions' prefixes ---------------------------------------------------

# Each test session provisions a prefix of its own (tests/actors/transport/conftest.py:
# t<unix seconds>x<hex>-, earlier sessions it<unix seconds><pid>-) and deletes it at its
# end; without that every session would leave six topics and two groups on the broker.
#: a test session's prefix, and the start time (unix seconds) in it
readonly SESSION_PREFIX_RE='^(it([0-9]{10})[0-9]+-|t([0-9]{10})x[0-9a-f]+-)file-export-command-v1$'

# Delete what init-topics.sh creates for prefix $1: the command topic, the worker group's
# DLQ topic, both groups and their %RETRY% topics, from every broker of the cluster and
# from the NameServer. The admin commands run in parallel (about 3 s of JVM each).
deprovision_prefix() {
  local p=$1 worker="${1}file-export-worker-v1" handler="${1}file-export-dlq-handler-v1"
  local out cmd i=0 pids=() failed=0
  case "$p" in
    "") die "deprovision: MQ_TOPIC_PREFIX is empty: those are production's names, not a test's" ;;
    *[!A-Za-z0-9_-]*) die "deprovision: MQ_TOPIC_PREFIX='$p': only letters, digits, '_' and '-'" ;;
  esac
  out=$(mktemp -d "$RUN_DIR/deprovision.XXXXXX")
  for cmd in \
    "deleteTopic -n $NAMESRV_ADDR -c $CLUSTER_NAME -t ${p}file-export-command-v1" \
    "deleteTopic -n $NAMESRV_ADDR -c $CLUSTER_NAME -t %DLQ%$worker" \
    "deleteTopic -n $NAMESRV_ADDR -c $CLUSTER_NAME -t %RETRY%$worker" \
    "deleteTopic -n $NAMESRV_ADDR -c $CLUSTER_NAME -t %RETRY%$handler" \
    "deleteSubGroup -n $NAMESRV_ADDR -c $CLUSTER_NAME -g $worker -r true" \
    "deleteSubGroup -n $NAMESRV_ADDR -c $CLUSTER_NAME -g $handler -r true"; do
    echo "$cmd" >"$out/$i.cmd"
    # shellcheck disable=SC2086 # names and numbers only (the prefix is checked above)
    admin $cmd >"$out/$i" 2>&1 &
    pids+=($!)
    i=$((i + 1))
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || true
    # the admin tool exits 0 even when a command fails: its "success" line is the result
    if ! grep -q "success" "$out/$i"; then
      grep -v -e '|-INFO' -e '^[[:space:]]*at ' "$out/$i" >&2 || true
      log "failed: mqadmin $(cat "$out/$i.cmd")"
      failed=1
    fi
  done
  rm -rf "$out"
  [ "$failed" = 0 ] || die "deprovisioning of prefix '$p' failed (output above)"
  log "deprovisioned prefix '$p'"
}

cmd_deprovision() {
  [ "${MQ_TOPIC_PREFIX+set}" = set ] || die "deprovision: MQ_TOPIC_PREFIX must name the prefix"
  [ -f "$LIB_DIR/.complete" ] || die "no jars in $LIB_DIR: run '$0 start' first"
  running_pid broker BrokerStartup >/dev/null || die "the broker is not running"
  deprovision_prefix "$MQ_TOPIC_PREFIX"
}

cmd_sweep() {
  local hours=${ROCKETMQ_SWEEP_HOURS:-24} now topic started stale=() p failed=0
  [[ "$hours" =~ ^[0-9]+$ ]] || die "ROCKETMQ_SWEEP_HOURS='$hours': a whole number of hours"
  [ -f "$LIB_DIR/.complete" ] || die "no jars in $LIB_DIR: run '$0 start' first"
  running_pid broker BrokerStartup >/dev/null || die "the broker is not running"
  now=$(date +%s)
  while read -r topic; do
    if [[ "$topic" =~ $SESSION_PREFIX_RE ]]; then
      started=${BASH_REMATCH[2]:-${BASH_REMATCH[3]}}
      [ $((now - started)) -lt $((hours * 3600)) ] || stale+=("${topic%file-export-command-v1}")
    fi
  done < <(admin topicList -n "$NAMESRV_ADDR" || true)
  for p in "${stale[@]}"; do
    (deprovision_prefix "$p") || failed=1
  done
  log "swept ${#stale[@]} test-session prefix(es) older than ${hours} h"
  [ "$failed" = 0 ]
}

# -- commands ---------------------------------------------------------------------------

# on a failed start, stop the servers this invocation started (their logs stay in RUN_DIR)
STARTED=()
cleanup_failed_start() {
  local rc=$? name
  if [ "$rc" != 0 ] && [ "${#STARTED[@]}" -gt 0 ]; then
    log "start failed; stopping what this run started (logs: $RUN_DIR)"
    for name in "${STARTED[@]}"; do
      case "$name" in
        broker) stop_one broker BrokerStartup ;;
        namesrv) stop_one namesrv NamesrvStartup ;;
      esac
    done
  fi
}

check_disk() {
  local used
  used=$(df -P "$RUN_DIR" | awk 'NR == 2 { sub("%", "", $5); print $5 }')
  if [ -n "$used" ] && [ "$used" -ge 85 ]; then
    log "WARNING: the disk of $RUN_DIR is ${used}% full; the broker refuses writes above 90%"
  fi
}

cmd_start() {
  require_tools
  fetch_jars
  mkdir -p "$RUN_DIR"
  check_disk
  local already=0
  if running_pid namesrv NamesrvStartup >/dev/null && running_pid broker BrokerStartup >/dev/null; then
    already=1
    log "already running (run dir $RUN_DIR); re-provisioning"
  else
    write_configs
    local t0 t1
    trap cleanup_failed_start EXIT
    t0=$(date +%s.%N)
    start_namesrv
    start_broker
    wait_for_cluster
    t1=$(date +%s.%N)
    trap - EXIT # the servers are up: a provisioning failure leaves them running
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "broker.sh: start-up time %.1f s (NameServer launch to broker registered)\n", b - a }'
  fi
  provision
  [ "$already" = 1 ] ||
    log "ready: NameServer $NAMESRV_ADDR ($NAMESRV_VERSION), broker $BROKER_ADDR" \
      "($ROCKETMQ_VERSION), run dir $RUN_DIR"
}

# $@ = components to stop (namesrv, broker); none = both
cmd_stop() {
  local which=" ${*:-namesrv broker} "
  # The broker first, so it can unregister from a NameServer that is still there.
  [[ "$which" != *" broker "* ]] || stop_one broker BrokerStartup
  [[ "$which" != *" namesrv "* ]] || stop_one namesrv NamesrvStartup
}

cmd_running() {
  local names=()
  if running_pid namesrv NamesrvStartup >/dev/null; then names+=(namesrv); fi
  if running_pid broker BrokerStartup >/dev/null; then names+=(broker); fi
  if [ "${#names[@]}" -gt 0 ]; then echo "${names[*]}"; fi
}

cmd_status() {
  local ns br
  ns=$(running_pid namesrv NamesrvStartup) || ns=
  br=$(running_pid broker BrokerStartup) || br=
  echo "namesrv: $(if [ -n "$ns" ]; then echo "running (pid $ns)"; else echo stopped; fi)"
  echo "broker:  $(if [ -n "$br" ]; then echo "running (pid $br)"; else echo stopped; fi)"
  [ -n "$ns" ] && [ -n "$br" ] || exit 3
  local out
  out=$(admin clusterList -n "$NAMESRV_ADDR" || true)
  if grep -q "$BROKER_NAME" <<<"$out"; then
    echo "cluster: $CLUSTER_NAME lists $BROKER_NAME at $BROKER_ADDR"
  else
    echo "cluster: broker not registered"
    exit 3
  fi
}

cmd_provision() {
  require_tools
  [ -f "$LIB_DIR/.complete" ] || die "no jars in $LIB_DIR: run '$0 start' first"
  running_pid broker BrokerStartup >/dev/null || die "the broker is not running: run '$0 start'"
  provision
}

case "${1:-}" in
  start) cmd_start ;;
  stop)
    shift
    for name in "$@"; do
      case "$name" in namesrv | broker) ;; *) die "stop: unknown server '$name' (namesrv, broker)" ;; esac
    done
    cmd_stop "$@"
    ;;
  status) cmd_status ;;
  provision) cmd_provision ;;
  deprovision) cmd_deprovision ;;
  sweep) cmd_sweep ;;
  running) cmd_running ;;
  dir) echo "$RUN_DIR" ;;
  *)
    echo "usage: $0 start|stop [namesrv|broker ...]|status|provision|deprovision|sweep|running|dir" >&2
    exit 2
    ;;
esac
