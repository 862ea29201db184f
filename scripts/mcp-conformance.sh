#!/usr/bin/env bash
# MCP conformance: drive a real daemon with the official MCP TypeScript SDK
# (@modelcontextprotocol/sdk), a client nobody on this project wrote.
#
# Installs the SDK with npm (versions pinned by scripts/mcp-conformance/
# package-lock.json) into .cache/mcp-conformance/ (git-ignored; reused while
# the lock file is unchanged), builds the host, the example skills and the
# test skill, starts `host serve` on a free port over a temporary skills
# tree, runs scripts/mcp-conformance/client.mjs against it (HTTP at /mcp,
# then `host mcp` over stdio, embedded and bridged), and stops the daemon
# with SIGTERM, checking that it exits cleanly. Prints PASS or FAIL last;
# exits non-zero on any mismatch.
#
# usage: scripts/mcp-conformance.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "mcp-conformance: FAIL: $*" >&2
  if [ -f "$work/host.log" ]; then
    echo "--- daemon log (last 40 lines) ---" >&2
    tail -n 40 "$work/host.log" >&2
  fi
  echo "mcp-conformance: FAIL"
  exit 1
}
say() { echo "mcp-conformance: $*"; }

command -v node >/dev/null || fail "node is not on PATH (Node 18 or newer is needed)"
command -v npm >/dev/null || fail "npm is not on PATH"
command -v go >/dev/null || fail "go is not on PATH"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' || fail "node $(node --version) is older than 18"

# The SDK, installed once per lock file.
src=scripts/mcp-conformance
cache=${MCP_CONFORMANCE_CACHE:-$root/.cache/mcp-conformance}
mkdir -p "$cache"
stamp=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$cache/.installed" 2>/dev/null)" != "$stamp" ] || [ ! -d "$cache/node_modules/@modelcontextprotocol/sdk" ]; then
  say "installing @modelcontextprotocol/sdk with npm into $cache"
  cp "$src/package.json" "$src/package-lock.json" "$cache/"
  (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1 || {
    cat "$work/npm.log" >&2
    fail "npm ci"
  }
  echo "$stamp" >"$cache/.installed"
fi
# client.mjs runs from the cache so that Node resolves the SDK there.
cp "$src/client.mjs" "$cache/client.mjs"
sdk_version=$(node -p 'require(process.argv[1]).version' "$cache/node_modules/@modelcontextprotocol/sdk/package.json")
say "client: @modelcontextprotocol/sdk $sdk_version on node $(node --version)"

# The daemon and its skills: the example skills plus the test skill as
# "probe" (one binary that plays any version; the client installs 1.1.0).
export CGO_ENABLED=0
go build -o "$work/host" ./cmd/host || fail "go build ./cmd/host"
go build -o "$work/testskill" ./internal/testskill || fail "go build ./internal/testskill"
bash scripts/build-skills.sh --out "$work/skills" >"$work/build.log" 2>&1 || {
  cat "$work/build.log" >&2
  fail "build-skills.sh"
}
install_probe() { # VERSION
  local stage="$work/skills/.staging/probe-$1" sum
  mkdir -p "$stage" "$work/skills/probe"
  cp "$work/testskill" "$stage/skill"
  sum=$(sha256sum "$stage/skill" | cut -d' ' -f1)
  cat >"$stage/manifest.json" <<JSON
{
  "manifest_version": 1, "name": "probe", "version": "$1",
  "description": "Conformance probe.", "entrypoint": "skill", "sha256": "$sum",
  "tags": ["test"], "env": {"TESTSKILL_NAME": "probe", "TESTSKILL_VERSION": "$1"}
}
JSON
  mv "$stage" "$work/skills/probe/$1"
}
install_probe 1.0.0

"$work/host" serve --skills "$work/skills" --listen 127.0.0.1:0 --addr-file "$work/addr" \
  --state-dir "$work/state" --grace 5s --debounce 100ms >"$work/host.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -s "$work/addr" ] && break; sleep 0.1; done
[ -s "$work/addr" ] || fail "the daemon did not listen"
addr=$(cat "$work/addr")
ready=false
for _ in $(seq 1 300); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz")" = 200 ]; then ready=true; break; fi
  kill -0 "$pid" 2>/dev/null || fail "the daemon exited before it was ready"
  sleep 0.1
done
$ready || fail "the daemon on $addr was not ready (GET /readyz != 200) within 30 s"
say "daemon ready on $addr"

if ! node "$cache/client.mjs" "http://$addr/mcp" "$work/skills" "$work/host" "$work/testskill" 2>&1 | sed -u 's/^/mcp-conformance: /'; then
  fail "the TypeScript SDK client found a mismatch (above)"
fi

# A clean stop: SIGTERM, exit 0, well within the grace period.
kill -TERM "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then fail "the daemon did not stop within 10 s of SIGTERM"; fi
status=0
wait "$pid" || status=$?
pid=""
[ "$status" = 0 ] || fail "the daemon exited with status $status"
grep -q 'stopped' "$work/host.log" || fail "the daemon did not log a clean stop"
say "daemon stopped cleanly"
echo "mcp-conformance: PASS"
