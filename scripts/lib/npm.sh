# shellcheck shell=bash
# Shared by scripts/install-mcp-servers.sh and scripts/build-node-skill.sh:
# install a pinned package.json + package-lock.json into a git-ignored cache
# folder with npm ci, once, and reuse it while the lock file is unchanged.
#
# Sourced, not run, under `set -euo pipefail`. NPM_PROG names the caller in
# messages.

# npm_need_node exits 3, with a message, when node or npm is missing or node
# is older than 18, so that a test can skip rather than fail.
npm_need_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "$NPM_PROG: node and npm are needed (Node 18 or newer); not found on PATH" >&2
    exit 3
  fi
  node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' || {
    echo "$NPM_PROG: node $(node --version) is older than 18" >&2
    exit 3
  }
}

# npm_ci_cached SRC CACHE PROBE [NPM_FLAG...] installs SRC's package files
# into CACHE with `npm ci --ignore-scripts` (nothing of the packages runs at
# install) and the flags given, unless CACHE already holds that lock file's
# install and CACHE/node_modules/PROBE. It takes CACHE/.lock for the rest of
# the caller's run: test binaries of several packages run the callers at
# once (go test ./...), and one installs while the others wait.
npm_ci_cached() {
  local src=$1 cache=$2 probe=$3
  shift 3
  mkdir -p "$cache"
  if command -v flock >/dev/null; then
    exec 9>"$cache/.lock"
    flock 9
  fi
  local stamp
  stamp=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$cache/.installed" 2>/dev/null)" = "$stamp" ] && [ -d "$cache/node_modules/$probe" ]; then
    return 0
  fi
  echo "$NPM_PROG: installing with npm into $cache" >&2
  rm -rf "$cache/node_modules" "$cache/.installed"
  cp "$src/package.json" "$src/package-lock.json" "$cache/"
  local log
  log=$(mktemp)
  if ! (cd "$cache" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error "$@") >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "$NPM_PROG: npm ci failed" >&2
    exit 1
  fi
  rm -f "$log"
  echo "$stamp" >"$cache/.installed"
}
