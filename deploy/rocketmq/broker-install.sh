#!/usr/bin/env bash
# Sourced by deploy/rocketmq/broker.sh (not run on its own): fetching the RocketMQ jars
# into $LIB_DIR / $NAMESRV_LIB_DIR and writing the servers' configuration under $RUN_DIR.
# Uses the variables and die/log that broker.sh defines before sourcing it.

# -- jars -------------------------------------------------------------------------------

# Copy the runtime dependency closure of org.apache.rocketmq artifacts ("artifactId:version",
# $3 ...) into directory $1, through a throwaway pom in $CACHE_DIR/$2. Returns non-zero when
# Maven cannot resolve them; the output directory only appears complete on success.
mvn_copy() {
  local out=$1 name=$2 deps="" spec
  shift 2
  for spec in "$@"; do
    deps+="
    <dependency>
      <groupId>org.apache.rocketmq</groupId>
      <artifactId>${spec%%:*}</artifactId>
      <version>${spec#*:}</version>
    </dependency>"
  done
  mkdir -p "$CACHE_DIR/$name"
  cat >"$CACHE_DIR/$name/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.export-center</groupId>
  <artifactId>$name</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>$deps
  </dependencies>
</project>
POM
  rm -rf "$out.tmp"
  # -B -Dstyle.color=never: no progress bars and no ANSI colour codes in the log
  if ! mvn -B -q -Dstyle.color=never -f "$CACHE_DIR/$name/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$out.tmp" >"$CACHE_DIR/$name/mvn.log" 2>&1; then
    rm -rf "$out.tmp"
    return 1
  fi
  rm -rf "$out"
  mv "$out.tmp" "$out"
  touch "$out/.complete" # written last: a half-finished fetch is never reused
}

fetch_jars() {
  if [ ! -f "$LIB_DIR/.complete" ]; then
    log "fetching RocketMQ $ROCKETMQ_VERSION broker + tools jars into $LIB_DIR (first run only)"
    if ! mvn_copy "$LIB_DIR" broker-tools-pom \
      "rocketmq-broker:$ROCKETMQ_VERSION" "rocketmq-tools:$ROCKETMQ_VERSION"; then
      tail -n 20 "$CACHE_DIR/broker-tools-pom/mvn.log" >&2
      die "mvn copy-dependencies of rocketmq-broker/rocketmq-tools $ROCKETMQ_VERSION failed"
    fi
    log "broker + tools jars cached ($(du -sh "$LIB_DIR" | cut -f1))"
  fi
  # The NameServer gets its own classpath: it is a separate process, and some Maven
  # repositories (partial mirrors) lack rocketmq-namesrv 5.3.1, so a later 5.3.x NameServer
  # may have to stand in. A NameServer only keeps routes and speaks the same Remoting
  # protocol across 5.3.x. The version in use is recorded in $NAMESRV_LIB_DIR/.version.
  if [ ! -f "$NAMESRV_LIB_DIR/.complete" ]; then
    local v log_file="$CACHE_DIR/namesrv-pom/mvn.log"
    for v in "$ROCKETMQ_VERSION" $NAMESRV_FALLBACK_VERSIONS; do
      log "fetching rocketmq-namesrv $v jars into $NAMESRV_LIB_DIR (first run only)"
      if mvn_copy "$NAMESRV_LIB_DIR" namesrv-pom "rocketmq-namesrv:$v"; then
        echo "$v" >"$NAMESRV_LIB_DIR/.version"
        break
      fi
      # An artifact the repository does not have is the expected case on partial mirrors:
      # one plain sentence. Anything else (network, settings) gets Maven's own reason,
      # without its [ERROR] prefix or colour codes, and the log's path.
      if grep -q -e 'was not found in' -e 'Could not find artifact' "$log_file"; then
        log "rocketmq-namesrv $v is not in the Maven repository"
      else
        log "Maven could not fetch rocketmq-namesrv $v: $(maven_reason "$log_file") (log: $log_file)"
      fi
    done
    [ -f "$NAMESRV_LIB_DIR/.complete" ] ||
      die "could not fetch rocketmq-namesrv (tried $ROCKETMQ_VERSION $NAMESRV_FALLBACK_VERSIONS)"
    [ "$(cat "$NAMESRV_LIB_DIR/.version")" = "$ROCKETMQ_VERSION" ] ||
      log "using NameServer $(cat "$NAMESRV_LIB_DIR/.version") with broker and tools" \
        "$ROCKETMQ_VERSION: a 5.3.x NameServer only keeps routes and speaks the same protocol"
  fi
  NAMESRV_VERSION=$(cat "$NAMESRV_LIB_DIR/.version")
}

# Maven's first error line in log $1, without ANSI escape codes or the "[ERROR] " prefix
maven_reason() {
  sed -e 's/\x1b\[[0-9;]*m//g' "$1" | grep -m1 '\[ERROR\]' | sed -e 's/^.*\[ERROR\] *//' || true
}

# -- configuration ----------------------------------------------------------------------

write_configs() {
  mkdir -p "$RUN_DIR/store" "$RUN_DIR/home"
  cat >"$RUN_DIR/namesrv.conf" <<EOF
listenPort=${NAMESRV_PORT}
bindAddress=127.0.0.1
EOF
  # Small store files keep a dev broker at a few hundred MB of disk and memory; the delay
  # levels are shortened to 1 s each so redelivery tests run in seconds (test only: the
  # production template keeps the broker defaults).
  cat >"$RUN_DIR/broker.conf" <<EOF
brokerClusterName=${CLUSTER_NAME}
brokerName=${BROKER_NAME}
brokerId=0
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
brokerIP1=127.0.0.1
bindAddress=127.0.0.1
listenPort=${BROKER_PORT}
namesrvAddr=${NAMESRV_ADDR}
storePathRootDir=${RUN_DIR}/store
storePathCommitLog=${RUN_DIR}/store/commitlog
mappedFileSizeCommitLog=67108864
mappedFileSizeConsumeQueue=120000
maxHashSlotNum=10000
maxIndexNum=40000
autoCreateTopicEnable=false
autoCreateSubscriptionGroup=false
deleteWhen=04
fileReservedTime=72
messageDelayLevel=1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s
EOF
}
