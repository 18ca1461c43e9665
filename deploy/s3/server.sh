#!/usr/bin/env bash
# A throwaway S3-compatible object store for tests and development, on loopback only:
# S3Proxy (org.gaul:s3proxy, Apache-2.0) over a directory, the real S3 protocol (SigV2/V4
# signatures, multipart uploads, ranges), not a mock.
#
#   deploy/s3/server.sh start    fetch the jars if missing (Maven), start, create the bucket dir
#   deploy/s3/server.sh stop     stop the server started here (by pid)
#   deploy/s3/server.sh url      print the endpoint URL
#   deploy/s3/server.sh running  print "s3proxy" when the server started here runs
#   deploy/s3/server.sh dir      print the data dir (deploy/services.sh keeps its notes there)
#
# Environment: EXPORT_CENTER_S3_DIR (default ${TMPDIR:-/tmp}/export-center-s3),
# EXPORT_CENTER_S3_PORT (default 9380). Access key export-center, secret
# export-center-secret, bucket export-center (a directory of the data dir). The jars are
# cached under the data dir's lib/ (first start only; Java 17 and Maven, as for RocketMQ).
set -euo pipefail

DIR=${EXPORT_CENTER_S3_DIR:-${TMPDIR:-/tmp}/export-center-s3}
PORT=${EXPORT_CENTER_S3_PORT:-9380}
VERSION=2.6.0
LIB="$DIR/lib-$VERSION"
PIDFILE="$DIR/s3proxy.pid"
ACCESS_KEY=export-center
SECRET_KEY=export-center-secret
BUCKET=export-center
SETSID=$(command -v setsid || true)

url() { echo "http://127.0.0.1:$PORT"; }

running() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q org.gaul.s3proxy.Main
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

fetch_jars() {
  [ -f "$LIB/.complete" ] && return
  command -v mvn >/dev/null 2>&1 || {
    echo "server.sh: Maven (mvn) is needed to fetch S3Proxy $VERSION" >&2
    exit 2
  }
  echo "server.sh: fetching S3Proxy $VERSION jars into $LIB (first start only)" >&2
  mkdir -p "$DIR/pom"
  cat >"$DIR/pom/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.export-center</groupId>
  <artifactId>s3proxy-pom</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.gaul</groupId>
      <artifactId>s3proxy</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
  rm -rf "$LIB.tmp"
  if ! mvn -B -q -Dstyle.color=never -f "$DIR/pom/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIB.tmp" >"$DIR/pom/mvn.log" 2>&1; then
    tail -n 20 "$DIR/pom/mvn.log" >&2
    echo "server.sh: Maven could not fetch S3Proxy $VERSION (log: $DIR/pom/mvn.log)" >&2
    exit 1
  fi
  rm -rf "$LIB"
  mv "$LIB.tmp" "$LIB"
  touch "$LIB/.complete" # written last: a half-finished fetch is never reused
}

start() {
  if ! running; then
    launch
  fi
  echo "server.sh: S3Proxy ready at $(url) (bucket $BUCKET)" >&2
}

launch() {
  fetch_jars
  if port_open "$PORT"; then
    echo "server.sh: port $PORT is in use by a process this script did not start" \
      "(set EXPORT_CENTER_S3_PORT, or EXPORT_CENTER_S3_DIR to its data dir)" >&2
    exit 1
  fi
  mkdir -p "$DIR/data/$BUCKET"
  cat >"$DIR/s3proxy.conf" <<CONF
s3proxy.endpoint=http://127.0.0.1:$PORT
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$ACCESS_KEY
s3proxy.credential=$SECRET_KEY
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir=$DIR/data
jclouds.identity=$ACCESS_KEY
jclouds.credential=$SECRET_KEY
CONF
  # Without a configuration logback logs everything at DEBUG: hundreds of MB a minute.
  cat >"$DIR/logback.xml" <<XML
<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{20} %msg%n</pattern></encoder>
  </appender>
  <logger name="org.gaul.s3proxy" level="INFO"/>
  <root level="WARN"><appender-ref ref="OUT"/></root>
</configuration>
XML
  # its own session (setsid): Ctrl-C of the test run that started it must not reach a
  # server that other runs may share; it stops only by `stop`.
  $SETSID java -Xmx256m -Dlogback.configurationFile="$DIR/logback.xml" -cp "$LIB/*" org.gaul.s3proxy.Main --properties "$DIR/s3proxy.conf" \
    >"$DIR/s3proxy.log" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 150); do
    if port_open "$PORT"; then return 0; fi
    running || break
    sleep 0.2
  done
  echo "server.sh: S3Proxy did not start; see $DIR/s3proxy.log" >&2
  tail -20 "$DIR/s3proxy.log" >&2
  exit 1
}

stop() {
  if ! running; then return; fi
  local pid
  pid=$(cat "$PIDFILE")
  kill "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) url ;;
  running) if running; then echo s3proxy; fi ;;
  dir) echo "$DIR" ;;
  *) sed -n '2,15p' "$0" >&2; exit 2 ;;
esac
