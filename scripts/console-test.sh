#!/usr/bin/env bash
# Browser tests of the operator console (/ui/): installs Debian's chromium
# (and the Noto CJK fonts, so Chinese renders in the screenshots) with
# apt-get when missing, then runs test/console in headless Chromium against
# a real daemon. Screenshots land in test/artifacts/console/.
#
#   scripts/console-test.sh                 install if needed, then test
#   scripts/console-test.sh --install-only  install if needed, no tests
#   CONSOLE_UPDATE_DOCS=1 scripts/console-test.sh   also rewrite docs/console.png
#   CHROMIUM=/path/to/chrome scripts/console-test.sh  use another browser
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "console-test: $*"; }
die() { echo "console-test: $*" >&2; exit 1; }

install_only=false
case "${1:-}" in
  "") ;;
  --install-only) install_only=true ;;
  *) die "unknown argument $1 (use --install-only or nothing)" ;;
esac

need=()
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null; then need+=(chromium); fi
has_cjk_font() { command -v fc-list >/dev/null && fc-list : family 2>/dev/null | grep -i 'Noto Sans CJK' >/dev/null; }
if ! has_cjk_font; then need+=(fonts-noto-cjk); fi
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "need ${need[*]} but there is no apt-get here; install Chromium yourself and set CHROMIUM=/path/to/chrome"
  [ "$(id -u)" -eq 0 ] || die "need ${need[*]} and apt-get needs root; run as root, or: sudo apt-get install -y ${need[*]}"
  say "installing ${need[*]} with apt-get"
  apt-get update -qq || die "apt-get update failed (no network or no package mirror?); install ${need[*]} another way"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
    || die "apt-get install ${need[*]} failed"
fi
browser=${CHROMIUM:-$(command -v chromium)}
[ -x "$browser" ] || die "no Chromium at $browser"
say "browser: $("$browser" --version 2>/dev/null | tail -n 1)"
$install_only && exit 0

# Missing the browser now is a failure, not a skip.
export SKILLHOST_REQUIRE_BROWSER=1 CHROMIUM="$browser"
go test -race -count=1 -timeout 15m ./test/console/
