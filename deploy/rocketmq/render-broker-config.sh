#!/bin/sh
# Render the broker configuration from broker.conf.template, then exec the broker (§16.1).
#
#   render-broker-config.sh                render, check, exec mqbroker (container command)
#   render-broker-config.sh --render-only  render and check only; prints the output path
#
# Environment:
#   ROCKETMQ_BROKER_IP        required: the address clients use to reach this broker, e.g.
#                             the compose service name "rocketmq-broker". Empty, loopback,
#                             wildcard and unresolved placeholder values are rejected: the
#                             broker registers this address at the NameServer as is.
#   ROCKETMQ_BROKER_TEMPLATE  template path (default /config/broker.conf.template)
#   ROCKETMQ_BROKER_CONF      rendered file (default /tmp/broker.conf); the read-only
#                             template is never modified
#   ROCKETMQ_NAMESRV_ADDR     NameServer for mqbroker -n (default rocketmq-namesrv:9876)
set -eu

template=${ROCKETMQ_BROKER_TEMPLATE:-/config/broker.conf.template}
out=${ROCKETMQ_BROKER_CONF:-/tmp/broker.conf}
namesrv=${ROCKETMQ_NAMESRV_ADDR:-rocketmq-namesrv:9876}
ip=${ROCKETMQ_BROKER_IP:-}

reject() {
  echo "render-broker-config: ROCKETMQ_BROKER_IP='$ip': $1" >&2
  echo "render-broker-config: set it to an explicit client-reachable address" >&2
  exit 1
}

case "$ip" in
  "") reject "empty" ;;
  localhost | localhost.* | 127.* | ::1 | 0:0:0:0:0:0:0:1 | 0.0.0.0 | ::) reject "loopback or wildcard" ;;
  *__BROKER_IP__* | *'$'*) reject "unresolved placeholder" ;;
esac
# A hostname or an IP address only: anything else would also break the sed expression.
if printf '%s' "$ip" | grep -q '[^A-Za-z0-9.:-]'; then
  reject "not a hostname or IP address"
fi
[ -r "$template" ] || {
  echo "render-broker-config: template $template not readable" >&2
  exit 1
}

sed "s/__BROKER_IP__/$ip/g" "$template" >"$out"
if grep -Eq '__BROKER_IP__|\$\{' "$out"; then
  echo "render-broker-config: $out still contains an unresolved placeholder" >&2
  grep -nE '__BROKER_IP__|\$\{' "$out" >&2
  exit 1
fi

if [ "${1:-}" = "--render-only" ]; then
  echo "$out"
  exit 0
fi
# The image's working directory is its bin/ folder, where mqbroker lives.
exec sh mqbroker -n "$namesrv" -c "$out"
