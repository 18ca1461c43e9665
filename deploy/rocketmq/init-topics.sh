#!/bin/sh
# Create Export Center's topics and consumer groups on a RocketMQ cluster, idempotently.
#
#   init-topics.sh    wait until the cluster is registered at the NameServer, create or
#                     update the topics and groups below, wait until the NameServer routes
#                     them, print one summary line; exit non-zero on any failure
#
# The ONE place the topic set-up lives: the compose topic-init service runs it against the
# production cluster (deploy/compose/docker-compose.yml) and the test command's loopback
# broker runs it too (deploy/rocketmq/broker.sh provision), so what production runs is what
# the tests run. Every command is an update of the same definition: running it again
# changes nothing, and a failed run can simply be re-run (compose: restart: on-failure).
#
# With prefix P (MQ_TOPIC_PREFIX; production sets it empty, the test environment "test-"):
#   topic  Pfile-export-command-v1               4 read / 4 write queues, read-write
#   group  Pfile-export-worker-v1                retryMaxTimes ROCKETMQ_WORKER_RETRY_MAX_TIMES
#   group  Pfile-export-dlq-handler-v1           retryMaxTimes ROCKETMQ_DLQ_HANDLER_RETRY_MAX_TIMES
#   topic  %DLQ%Pfile-export-worker-v1           1/1 queue, perm 6: a DLQ topic the broker
#                                                creates itself is write-only (2) and the
#                                                DLQ handler could not read it
#   topics %RETRY%<each group>                   1/1 queue, perm 6: the broker would create
#                                                them on a consumer's first heartbeat, but a
#                                                consumer that started earlier learns their
#                                                route only 30 s later (a slow first retry)
# Topics and groups are created on every master of the cluster (-c), so a second broker
# added to the cluster gets them by running this again.
#
# Environment:
#   ROCKETMQ_NAMESRV_ADDR   required: NameServer host:port (compose: rocketmq-namesrv:9876)
#   ROCKETMQ_CLUSTER        required: the brokerClusterName of broker.conf to wait for and
#                           create on (compose: ExportCenterCluster)
#   MQ_TOPIC_PREFIX         required to be set; an empty value is valid (production)
#   ROCKETMQ_WORKER_RETRY_MAX_TIMES       default 16: the application dead-letters an
#                           undecodable command itself after 2 redeliveries, so the broker's
#                           own limit must stay above that and never be reached first
#   ROCKETMQ_DLQ_HANDLER_RETRY_MAX_TIMES  default 2147483647: the DLQ handler retries its
#                           database work without limit and must never reach a second DLQ
#   ROCKETMQ_INIT_TIMEOUT   seconds to wait for the cluster, and for the routes (default 120)
#   ROCKETMQ_INIT_ATTEMPTS  tries of each admin command before giving up (default 5)
#   ROCKETMQ_ADMIN_CLASSPATH  a directory of the rocketmq-tools jars: run the admin tool
#                           with `java` from them (the test command's loopback broker).
#                           Unset: `sh $ROCKETMQ_HOME/bin/mqadmin` of the apache/rocketmq
#                           image, or `mqadmin` on PATH.
#   ROCKETMQ_ADMIN_HOME     with ROCKETMQ_ADMIN_CLASSPATH: the JVM's user.home (its logs)
#
# POSIX sh: the apache/rocketmq image runs it with `sh`.
set -eu

die() {
  echo "init-topics: $*" >&2
  exit 1
}
log() { echo "init-topics: $*" >&2; }

NAMESRV=${ROCKETMQ_NAMESRV_ADDR:-}
CLUSTER=${ROCKETMQ_CLUSTER:-}
[ -n "$NAMESRV" ] || die "ROCKETMQ_NAMESRV_ADDR must name the NameServer (host:port)"
[ -n "$CLUSTER" ] || die "ROCKETMQ_CLUSTER must name the broker cluster (brokerClusterName)"
[ "${MQ_TOPIC_PREFIX+set}" = set ] ||
  die "MQ_TOPIC_PREFIX must be set (an empty value is valid: production uses no prefix)"
PREFIX=$MQ_TOPIC_PREFIX
# RocketMQ's own rule for topic and group names; it also keeps the commands below, which
# are split on spaces, safe
case "$PREFIX" in
  *[!A-Za-z0-9_-]*) die "MQ_TOPIC_PREFIX='$PREFIX': only letters, digits, '_' and '-'" ;;
esac
WORKER_RETRY_MAX_TIMES=${ROCKETMQ_WORKER_RETRY_MAX_TIMES:-16}
DLQ_HANDLER_RETRY_MAX_TIMES=${ROCKETMQ_DLQ_HANDLER_RETRY_MAX_TIMES:-2147483647}
TIMEOUT=${ROCKETMQ_INIT_TIMEOUT:-120}
ATTEMPTS=${ROCKETMQ_INIT_ATTEMPTS:-5}

TOPIC="${PREFIX}file-export-command-v1"
WORKER="${PREFIX}file-export-worker-v1"
DLQ_HANDLER="${PREFIX}file-export-dlq-handler-v1"
DLQ_TOPIC="%DLQ%${WORKER}"

admin() {
  if [ -n "${ROCKETMQ_ADMIN_CLASSPATH:-}" ]; then
    # Tiered level 1 halves the admin tool's start-up; it runs one short command per JVM.
    java -Xms64m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      "-Duser.home=${ROCKETMQ_ADMIN_HOME:-${TMPDIR:-/tmp}}" \
      "-Drmq.logback.configurationFile=rmq.tools.logback.xml" \
      -cp "$ROCKETMQ_ADMIN_CLASSPATH/*" org.apache.rocketmq.tools.command.MQAdminStartup "$@" 2>&1
  elif [ -n "${ROCKETMQ_HOME:-}" ] && [ -f "$ROCKETMQ_HOME/bin/mqadmin" ]; then
    sh "$ROCKETMQ_HOME/bin/mqadmin" "$@" 2>&1
  else
    mqadmin "$@" 2>&1
  fi
}

# 1. The broker must be registered: clusterList exits 0 as soon as the NameServer answers,
# even with no broker, so its output must name the cluster (and a broker in it).
wait_for_cluster() {
  start=$(date +%s)
  while :; do
    out=$(admin clusterList -n "$NAMESRV" || true)
    if printf '%s\n' "$out" | grep -q "^$CLUSTER[[:space:]]"; then
      return 0
    fi
    if [ $(($(date +%s) - start)) -ge "$TIMEOUT" ]; then
      printf '%s\n' "$out" >&2
      die "cluster $CLUSTER not registered at $NAMESRV after ${TIMEOUT}s"
    fi
    sleep 2
  done
}

# 2. Each admin JVM spends about 3 s in its client's shutdown, so the commands run in
# parallel (serially they take about a minute). The admin tool exits 0 even when a command
# fails: its "success" line is the result. A command that fails (a NameServer or broker
# too slow to answer on a loaded host: a 3 s remoting timeout) is tried again, up to
# ROCKETMQ_INIT_ATTEMPTS times: each one is idempotent.
run_one() { # $1 = command (words separated by spaces), $2 = output file
  attempt=1
  while :; do
    # shellcheck disable=SC2086 # names and numbers only (the prefix is checked above)
    admin $1 >"$2" 2>&1 || true
    if grep -q "success" "$2"; then return 0; fi
    [ "$attempt" -lt "$ATTEMPTS" ] || return 1
    log "retrying ($attempt of $ATTEMPTS failed): mqadmin $1"
    attempt=$((attempt + 1))
    sleep 2
  done
}

run_all() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/init-topics.XXXXXX")
  pids=""
  i=0
  for cmd in "$@"; do
    echo "$cmd" >"$dir/$i.cmd"
    run_one "$cmd" "$dir/$i" &
    pids="$pids $!"
    i=$((i + 1))
  done
  failed=0
  n=0
  for pid in $pids; do
    if ! wait "$pid"; then
      grep -v -e '|-INFO' -e '^[[:space:]]*at ' "$dir/$n" >&2 || true
      log "failed after $ATTEMPTS attempts: mqadmin $(cat "$dir/$n.cmd")"
      failed=1
    fi
    n=$((n + 1))
  done
  rm -rf "$dir"
  [ "$failed" = 0 ]
}

# 3. The NameServer must route each topic (the broker registers it at its next heartbeat),
# with the permission asked for.
wait_for_route() {
  topic=$1
  start=$(date +%s)
  while :; do
    out=$(admin topicRoute -n "$NAMESRV" -t "$topic" || true)
    if printf '%s\n' "$out" | grep -q '"perm":6'; then
      return 0
    fi
    if [ $(($(date +%s) - start)) -ge "$TIMEOUT" ]; then
      printf '%s\n' "$out" >&2
      log "no read-write route for topic $topic at $NAMESRV after ${TIMEOUT}s"
      return 1
    fi
    sleep 1
  done
}

t0=$(date +%s)
log "waiting for cluster $CLUSTER at $NAMESRV"
wait_for_cluster
log "provisioning prefix '$PREFIX' on cluster $CLUSTER"
run_all \
  "updateTopic -n $NAMESRV -c $CLUSTER -t $TOPIC -r 4 -w 4 -p 6" \
  "updateSubGroup -n $NAMESRV -c $CLUSTER -g $WORKER -r $WORKER_RETRY_MAX_TIMES -q 1" \
  "updateSubGroup -n $NAMESRV -c $CLUSTER -g $DLQ_HANDLER -r $DLQ_HANDLER_RETRY_MAX_TIMES -q 1" \
  "updateTopic -n $NAMESRV -c $CLUSTER -t $DLQ_TOPIC -r 1 -w 1 -p 6" \
  "updateTopic -n $NAMESRV -c $CLUSTER -t %RETRY%$WORKER -r 1 -w 1 -p 6" \
  "updateTopic -n $NAMESRV -c $CLUSTER -t %RETRY%$DLQ_HANDLER -r 1 -w 1 -p 6" ||
  die "provisioning of prefix '$PREFIX' failed (output above); run again to retry"

pids=""
for topic in "$TOPIC" "$DLQ_TOPIC" "%RETRY%$WORKER" "%RETRY%$DLQ_HANDLER"; do
  wait_for_route "$topic" &
  pids="$pids $!"
done
failed=0
for pid in $pids; do wait "$pid" || failed=1; done
[ "$failed" = 0 ] || die "topics created but not routed (output above)"

log "provisioned in $(($(date +%s) - t0))s: topics $TOPIC, $DLQ_TOPIC (read-write);" \
  "groups $WORKER, $DLQ_HANDLER"
