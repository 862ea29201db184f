#!/usr/bin/env bash
# Installs the public MCP servers from npm that pkg/mcprt's tests run
# unmodified (@modelcontextprotocol/server-everything and
# @modelcontextprotocol/server-memory; versions pinned by
# scripts/mcp-servers/package-lock.json) into .cache/npm-mcp/ (git-ignored;
# reused while the lock file is unchanged), with --ignore-scripts (nothing of
# theirs runs at install) and --no-bin-links (a skill folder holds no
# symbolic links: the folder digest refuses them).
#
# Prints the cache folder on its last line. Exits 3, with a message, when
# node or npm is missing, so a test can skip rather than fail.
#
# usage: scripts/install-mcp-servers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install-mcp-servers: node and npm are needed (Node 18 or newer); not found on PATH" >&2
  exit 3
fi
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' || {
  echo "install-mcp-servers: node $(node --version) is older than 18" >&2
  exit 3
}

src=scripts/mcp-servers
cache=${MCP_SERVERS_CACHE:-$root/.cache/npm-mcp}
mkdir -p "$cache"
# Test binaries of several packages run this at once (go test ./...): one
# installs while the others wait, then find it installed.
if command -v flock >/dev/null; then
  exec 9>"$cache/.lock"
  flock 9
fi
stamp=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$cache/.installed" 2>/dev/null)" != "$stamp" ] || [ ! -d "$cache/node_modules/@modelcontextprotocol/server-everything" ]; then
  echo "install-mcp-servers: installing with npm into $cache" >&2
  rm -rf "$cache/node_modules" "$cache/.installed"
  cp "$src/package.json" "$src/package-lock.json" "$cache/"
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  (cd "$cache" && npm ci --ignore-scripts --no-bin-links --no-audit --no-fund --loglevel=error) >"$log" 2>&1 || {
    cat "$log" >&2
    echo "install-mcp-servers: npm ci failed" >&2
    exit 1
  }
  echo "$stamp" >"$cache/.installed"
fi
echo "$cache"
