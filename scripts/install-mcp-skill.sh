#!/usr/bin/env bash
# Installs an npm-published stdio MCP server as a skill version folder for
# the "mcp" runtime (pkg/mcprt; see docs/manifest.md, "runtime": "mcp").
#
#   scripts/install-mcp-skill.sh PACKAGE[@VERSION] --name SKILL [options] [-- SERVER_ARGS...]
#
# npm installs PACKAGE into a staging folder beside the tree with
# --ignore-scripts (nothing of the package runs at install) and
# --no-bin-links (a skill folder holds no symbolic links); the script writes
# manifest.json with "runtime": "mcp", "command": "node", the package's bin
# script and SERVER_ARGS as "args", and the folder digest as
# "digest": "sha256:<hex>"; then it renames the folder to
# SKILLS/<name>/<version> (the package's version), which a running host
# picks up. The host runs "node" only if the operator allowed it
# (host serve --runtime node=/usr/bin/node); see docs/manifest.md.
#
# Options:
#   --skills DIR        the tree (default: the repository's skills/)
#   --bin NAME          which of the package's bins to run (default: its only one)
#   --description TEXT  default: the package's description
#   --tag TAG           repeatable
#   --env KEY=VALUE     repeatable; "${HOME}" in VALUE is the server's private home
#
# Example:
#   scripts/install-mcp-skill.sh @modelcontextprotocol/server-memory@2026.8.31 --name memory \
#     --tag memory --env 'MEMORY_FILE_PATH=${HOME}/memory.jsonl'
set -euo pipefail

SK_PROG=install-mcp-skill # read by lib/install.sh
export SK_PROG
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=SCRIPTDIR/lib/install.sh
. "$root/scripts/lib/install.sh"

# usage prints the header comment above, however long it grows.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

skills="$root/skills"
pkg= name= bin= description=
tags=() envs=() args=()
while [ $# -gt 0 ]; do
  case $1 in
  --skills | --name | --bin | --description | --tag | --env)
    [ $# -ge 2 ] || sk_die "$1 needs a value"
    case $1 in
    --skills) skills=$2 ;;
    --name) name=$2 ;;
    --bin) bin=$2 ;;
    --description) description=$2 ;;
    --tag) tags+=("$2") ;;
    --env) envs+=("$2") ;;
    esac
    shift 2
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  --)
    shift
    args=("$@")
    break
    ;;
  -*) sk_die "unknown option $1 (see --help)" ;;
  *)
    [ -z "$pkg" ] || sk_die "only one PACKAGE may be given (got '$pkg' and '$1')"
    pkg=$1
    shift
    ;;
  esac
done
[ -n "$pkg" ] || { usage >&2; exit 2; }
[[ $name =~ $SK_NAME_RE ]] && [ ${#name} -le 32 ] || sk_die "--name '$name' must match $SK_NAME_RE (at most 32 characters)"
for e in "${envs[@]+"${envs[@]}"}"; do
  [[ ${e%%=*} =~ ^[A-Z_][A-Z0-9_]*$ ]] && [[ $e == *=* ]] || sk_die "--env '$e' must be KEY=VALUE with KEY in ^[A-Z_][A-Z0-9_]*$"
done
command -v node >/dev/null && command -v npm >/dev/null || sk_die "node and npm are required"

sk_init
mkdir -p -- "$skills" || sk_die "cannot create $skills"
sk_stage "$skills"
stage=$SK_STAGE

# A fixed name: npm would name the project after the staging folder, in
# files the digest covers.
jq -n --arg n "skillhost-skill-$name" '{name: $n, private: true}' >"$stage/package.json"
log=$(mktemp)
SK_CLEANUP+=("$log")
(cd "$stage" && npm install --ignore-scripts --no-bin-links --no-audit --no-fund --save-exact \
  --prefer-offline --loglevel=error -- "$pkg") >"$log" 2>&1 || {
  cat "$log" >&2
  sk_die "npm install $pkg failed"
}

# The package's own name (PACKAGE may carry a version or a tag).
pname=$(jq -r '.dependencies | keys[0] // empty' "$stage/package.json")
pjson="$stage/node_modules/$pname/package.json"
[ -n "$pname" ] && [ -f "$pjson" ] || sk_die "cannot find what npm installed for $pkg"
version=$(jq -r '.version // empty' "$pjson")
[[ $version =~ $SK_SEMVER_RE ]] || sk_die "$pname's version '$version' is not a semantic version"
[ -n "$description" ] || description=$(jq -r '.description // empty' "$pjson")
[ -n "$description" ] || description="MCP server $pname"
script=$(jq -r --arg b "$bin" --arg n "${pname##*/}" '
  .bin as $bins
  | if ($bins | type) == "string" then $bins
    elif ($bins | type) == "object" then
      if $b != "" then ($bins[$b] // empty)
      elif ($bins | length) == 1 then ($bins | to_entries[0].value)
      else ($bins[$n] // empty) end
    else empty end' "$pjson")
[ -n "$script" ] || sk_die "$pname has no bin to run$( [ -n "$bin" ] && echo " named $bin"); name one with --bin ($(jq -c '.bin // {} | if type == "object" then keys else . end' "$pjson"))"
script="node_modules/$pname/${script#./}"
[ -f "$stage/$script" ] || sk_die "$pname's bin $script is not a file"

links=$(cd "$stage" && find . -type l | head -3)
[ -z "$links" ] || sk_die "the installed folder holds symbolic links, which the folder digest refuses: $links"
digest=$(cd "$stage" && find . -type f ! -path ./manifest.json -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)

jq -n --arg name "$name" --arg version "$version" --arg description "$description" \
  --arg script "$script" --arg sha "$digest" \
  --args '{
    manifest_version: 1, name: $name, version: $version, description: $description,
    runtime: "mcp", command: "node", args: ([$script] + $ARGS.positional), digest: ("sha256:" + $sha)
  }' "${args[@]+"${args[@]}"}" >"$stage/manifest.json"
for t in "${tags[@]+"${tags[@]}"}"; do
  jq --arg t "$t" '.tags = ((.tags // []) + [$t])' "$stage/manifest.json" >"$stage/manifest.tmp" && mv "$stage/manifest.tmp" "$stage/manifest.json"
done
for e in "${envs[@]+"${envs[@]}"}"; do
  jq --arg k "${e%%=*}" --arg v "${e#*=}" '.env[$k] = $v' "$stage/manifest.json" >"$stage/manifest.tmp" && mv "$stage/manifest.tmp" "$stage/manifest.json"
done

find "$stage" -exec chmod go-w {} + 2>/dev/null || true
target="$skills/$name/$version"
mkdir -p -- "$skills/$name"
if [ -e "$target" ]; then
  if [ "$(jq -r '.digest // empty' "$target/manifest.json" 2>/dev/null)" = "sha256:$digest" ] &&
    cmp -s "$target/manifest.json" "$stage/manifest.json"; then
    sk_log "$name $version is already installed in $target (sha256 ${digest:0:12}…); unchanged"
    exit 0
  fi
  sk_die "$target exists and differs; remove it or install under another skill name"
fi
mv "${SK_MV_T[@]+"${SK_MV_T[@]}"}" -- "$stage" "$target" || sk_die "cannot rename $stage to $target"
sk_log "installed $pname $version as $name in $target (sha256 ${digest:0:12}…)"
