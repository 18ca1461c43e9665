#!/usr/bin/env bash
# Toxiproxy, the TCP proxy the partition tests put in a link to add latency (tests/hosts/).
#
#   deploy/toxiproxy/install.sh          build it once (Go module proxy), print its path
#   deploy/toxiproxy/install.sh path     print the path it is (or would be) at
#
# Built with `go install` from the Go module proxy at the version below, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/export-center/toxiproxy-<version>/ (the first build takes
# about a minute: its modules are fetched and compiled). Needs Go (the machine's own).
set -euo pipefail

VERSION=v2.5.0
MODULE=github.com/Shopify/toxiproxy/v2/cmd/server
DIR=${XDG_CACHE_HOME:-$HOME/.cache}/export-center/toxiproxy-$VERSION
BIN="$DIR/server"

case "${1:-install}" in
  path)
    echo "$BIN"
    ;;
  install)
    if [ ! -x "$BIN" ]; then
      command -v go >/dev/null || { echo "toxiproxy/install.sh: Go is needed to build Toxiproxy" >&2; exit 1; }
      echo "toxiproxy/install.sh: building Toxiproxy $VERSION from the Go module proxy ..." >&2
      mkdir -p "$DIR"
      GOBIN="$DIR" GOFLAGS=-mod=mod go install "$MODULE@$VERSION"
    fi
    echo "$BIN"
    ;;
  *)
    sed -n '2,9p' "$0" >&2
    exit 2
    ;;
esac
