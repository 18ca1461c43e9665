#!/usr/bin/env bash
# Installs the distribution packages that provide commands the tests need, when missing.
#
#   deploy/ensure-commands.sh COMMAND=PACKAGE ...
#   e.g. deploy/ensure-commands.sh soffice=libreoffice-calc chromedriver=chromium-driver
#
# A COMMAND that starts with / is a file the package provides (a font has no command).
# For every COMMAND not on PATH, PACKAGE is installed with apt-get (as root, quiet,
# non-interactive, --no-install-recommends), all missing packages in one apt-get run.
# Anything it cannot do fails with a message naming the command and the package: the
# tests that need these real programs never skip (same approach as deploy/mariadb/server.sh).
set -euo pipefail

if [ $# -eq 0 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi

present() {
  case "$1" in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing=()
commands=()
for pair in "$@"; do
  command=${pair%%=*}
  package=${pair#*=}
  if [ -z "$command" ] || [ -z "$package" ] || [ "$command" = "$pair" ]; then
    echo "ensure-commands.sh: '$pair' is not COMMAND=PACKAGE" >&2
    exit 2
  fi
  if ! present "$command"; then
    missing+=("$package")
    commands+=("$command")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "ensure-commands.sh: ${commands[*]} missing; installing ${missing[*]} from the distribution's packages ..." >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-commands.sh: installing needs root; install them (apt-get install ${missing[*]})" \
    "and run the tests again" >&2
  exit 2
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-commands.sh: there is no apt-get here; install what provides ${commands[*]}" \
    "so that they are on PATH, then run the tests again" >&2
  exit 2
fi
# Another apt-get may hold the lock for a while (a shared machine): wait for it.
if ! {
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
}; then
  echo "ensure-commands.sh: installing ${missing[*]} failed (see apt-get's output above)" >&2
  exit 2
fi
for command in "${commands[@]}"; do
  if ! present "$command"; then
    echo "ensure-commands.sh: installed, but '$command' is still not on PATH" >&2
    exit 2
  fi
done
