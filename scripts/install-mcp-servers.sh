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

NPM_PROG=install-mcp-servers # read by lib/npm.sh
# shellcheck source=SCRIPTDIR/lib/npm.sh
. "$root/scripts/lib/npm.sh"
npm_need_node
cache=${MCP_SERVERS_CACHE:-$root/.cache/npm-mcp}
npm_ci_cached scripts/mcp-servers "$cache" @modelcontextprotocol/server-everything --no-bin-links
echo "$cache"
