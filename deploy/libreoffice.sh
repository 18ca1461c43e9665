#!/usr/bin/env bash
# LibreOffice Calc for the third XLSX reader of the writer tests (tests/pipeline).
#
#   deploy/libreoffice.sh ensure   install libreoffice-calc from the distribution's packages
#                                  when `soffice` is missing; fail with a clear message if
#                                  that is impossible (the tests never skip this reader)
#
# Same approach as deploy/mariadb/server.sh: apt-get, as root, quiet, non-interactive.
# `--no-install-recommends` keeps it to Calc and its core (no Java, no fonts beyond the
# defaults), which is all `soffice --headless --convert-to csv` needs.
set -euo pipefail

ensure() {
  if command -v soffice >/dev/null 2>&1; then return; fi
  echo "libreoffice.sh: soffice is missing; installing libreoffice-calc from the distribution's packages ..." >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "libreoffice.sh: libreoffice-calc is missing and installing it needs root;" \
      "install it (apt-get install libreoffice-calc) and run the tests again" >&2
    exit 2
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "libreoffice.sh: soffice is missing and there is no apt-get here;" \
      "install LibreOffice Calc so that 'soffice' is on PATH, then run the tests again" >&2
    exit 2
  fi
  if ! {
    apt-get update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libreoffice-calc >/dev/null
  }; then
    echo "libreoffice.sh: installing libreoffice-calc failed (see apt-get's output above);" \
      "the XLSX reader tests need 'soffice'" >&2
    exit 2
  fi
  if ! command -v soffice >/dev/null 2>&1; then
    echo "libreoffice.sh: libreoffice-calc installed but 'soffice' is not on PATH" >&2
    exit 2
  fi
}

case "${1:-}" in
  ensure) ensure ;;
  *)
    sed -n '2,7p' "$0" >&2
    exit 2
    ;;
esac
