#!/usr/bin/env bash
# Builds the JavaScript example skill (examples/polyglot/wordstats-node) into
# a skill version folder: its npm dependencies (pinned by its
# package-lock.json) are installed into .cache/npm-polyglot/ (git-ignored;
# reused while the lock file is unchanged) with --ignore-scripts, and esbuild
# bundles skill.js, those dependencies and sdk/proto/skill.proto into one
# script, "skill", whose first line is "#!<node>". That one file is the
# version's entrypoint, so its sha256 in manifest.json vouches for all the
# JavaScript that runs (docs/sdk.md, "Skills in other languages").
#
# OUT_DIR (a version folder: it must not exist, or it is replaced) defaults
# to .cache/npm-polyglot/wordstats, rebuilt only when the sources, the lock
# file or node change. Prints the version folder on its
# last line. Exits 3, with a message, when node or npm is missing, so a test
# can skip rather than fail.
#
# usage: scripts/build-node-skill.sh [OUT_DIR]
set -euo pipefail
out=${1:-}
[ -z "$out" ] || out=$(realpath -m -- "$out") # from the caller's folder
cd "$(dirname "$0")/.."
root=$(pwd)

NPM_PROG=build-node-skill # read by lib/npm.sh
# shellcheck source=SCRIPTDIR/lib/npm.sh
. "$root/scripts/lib/npm.sh"
npm_need_node
node_bin=$(node -p 'require("fs").realpathSync(process.execPath)')

src=examples/polyglot/wordstats-node
cache=${NODE_SKILL_CACHE:-$root/.cache/npm-polyglot}
# The lock taken here also covers the build below.
npm_ci_cached "$src" "$cache" @grpc/grpc-js
# The default folder is rebuilt only when what goes into it changed, and
# under the lock: test binaries copy it while others may ask for it.
if [ -z "$out" ]; then
  out=$cache/wordstats
  built=$(cat "$0" "$src/skill.js" sdk/proto/skill.proto "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
  built="$built $node_bin"
  if [ "$(cat "$cache/.built" 2>/dev/null)" = "$built" ] && [ -f "$out/skill" ] && [ -f "$out/manifest.json" ]; then
    echo "$out"
    exit 0
  fi
  rm -f "$cache/.built"
fi
rm -rf "$out"
mkdir -p "$out"
# esbuild resolves the dependencies from the cache (NODE_PATH) and inlines
# skill.proto as text; the banner is the interpreter line.
NODE_PATH="$cache/node_modules" node "$cache/node_modules/esbuild/bin/esbuild" "$src/skill.js" \
  --bundle --platform=node --target=node18 --format=cjs --log-level=warning \
  --loader:.proto=text --banner:js="#!$node_bin" --outfile="$out/skill"
chmod 0755 "$out/skill"
sum=$(sha256sum "$out/skill" | cut -d' ' -f1)
cat >"$out/manifest.json" <<JSON
{
  "manifest_version": 1,
  "name": "wordstats",
  "version": "1.0.0",
  "description": "Word statistics of a text, served by a skill written in JavaScript.",
  "entrypoint": "skill",
  "sha256": "$sum",
  "tags": ["text", "example"]
}
JSON
[ -z "${built:-}" ] || echo "$built" >"$cache/.built"
echo "$out"
