#!/usr/bin/env bash
# The download center script's cheap checks, no browser needed (README, "Tests"):
#
#   deploy/page-checks/run.sh            all three, in this order; the first failure stops it
#   deploy/page-checks/run.sh types      tsc --noEmit: the JSDoc types of web/static/*.js,
#                                        strict, with the DOM's (tsconfig.json here)
#   deploy/page-checks/run.sh lint       ESLint, no warning allowed (eslint.config.mjs here)
#   deploy/page-checks/run.sh unit       node --test tests/web/static/*.test.mjs: the pure
#                                        modules case by case, and one owner per DOM id
#
# TypeScript and ESLint come from the npm registry at the versions and hashes of
# package-lock.json here, installed into node_modules here by `npm ci` when missing or when
# the lock changed. Needs Node.js 20.19 or newer, with npm.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=deploy/page-checks

install_tools() {
  command -v npm >/dev/null || { echo "page-checks: npm is needed (Node.js)" >&2; exit 1; }
  local stamp="$HERE/node_modules/.export-center-installed" want
  want=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    npm ci --prefix "$HERE" --no-audit --no-fund --loglevel=error
    echo "$want" > "$stamp"
  fi
}

checks=("$@")
[ $# -gt 0 ] || checks=(types lint unit)
for name in "${checks[@]}"; do
  case "$name" in
    types | lint | unit) ;;
    *) sed -n '2,9p' "$0" >&2; exit 2 ;;
  esac
done

# Say which check failed, and how to run it alone, when one stops the run.
current=""
trap '[ -z "$current" ] || echo "page-checks: the page script'"'"'s $current check failed" \
  "(deploy/page-checks/run.sh $current runs it alone)" >&2' EXIT

for current in "${checks[@]}"; do
  case "$current" in
    types)
      install_tools
      "$HERE/node_modules/.bin/tsc" -p "$HERE/tsconfig.json"
      ;;
    lint)
      install_tools
      "$HERE/node_modules/.bin/eslint" -c "$HERE/eslint.config.mjs" --max-warnings 0 \
        web/static tests/web/static "$HERE/eslint.config.mjs"
      ;;
    unit)
      node --test tests/web/static/*.test.mjs
      ;;
  esac
done
current=""
