#!/usr/bin/env bash
# Builds the example skills under examples/skills/ (all, or the NAMEs given:
# calc, coderunner, policy, textkit)
# and installs each into a skills tree as DIR/<name>/<version>/ holding the
# binary and its manifest.json (the binary's --manifest skeleton plus the
# binary's sha256).
#
# Installation is atomic: each version is staged under DIR/.staging/ and
# renamed into place, so a watching host never sees a partial folder. A
# version already installed with the same sha256 and manifest is skipped, so
# running the script twice changes nothing; builds are reproducible
# (-trimpath, no VCS stamp, CGO off) and stripped (-s -w), see docs/sdk.md.
#
# usage: scripts/build-skills.sh [--out DIR] [NAME...]
set -euo pipefail

SK_PROG=build-skills # read by lib/install.sh
export SK_PROG
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=SCRIPTDIR/lib/install.sh
. "$root/scripts/lib/install.sh"

usage() {
  cat <<USAGE
usage: scripts/build-skills.sh [--out DIR] [NAME...]

Builds examples/skills/NAME (default: every example skill) and installs each
into DIR/<name>/<version>/ (default DIR: $root/skills).
USAGE
}

out="$root/skills"
names=()
while [ $# -gt 0 ]; do
  case $1 in
  --out)
    [ $# -ge 2 ] || sk_die "--out needs a directory"
    out=$2
    shift 2
    ;;
  --out=*)
    out=${1#--out=}
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  -*) sk_die "unknown option $1 (see --help)" ;;
  *)
    names+=("$1")
    shift
    ;;
  esac
done
[ -n "$out" ] || sk_die "--out must not be empty"

command -v go >/dev/null 2>&1 || sk_die "go is not on PATH"
sk_init
mkdir -p -- "$out" || sk_die "cannot create $out"
out=$(cd "$out" && pwd)

if [ ${#names[@]} -eq 0 ]; then
  for d in "$root"/examples/skills/*/; do
    [ -f "$d/main.go" ] && names+=("$(basename "$d")")
  done
  [ ${#names[@]} -gt 0 ] || sk_die "no example skills found under $root/examples/skills"
fi
for name in "${names[@]}"; do
  [[ $name =~ $SK_NAME_RE ]] || sk_die "'$name' is not a valid skill name"
  [ -f "$root/examples/skills/$name/main.go" ] || sk_die "no example skill '$name' (expected $root/examples/skills/$name/main.go)"
done

cd "$root"
for name in "${names[@]}"; do
  sk_stage "$out"
  stage=$SK_STAGE
  sk_log "building $name"
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w" -o "$stage/$name" "./examples/skills/$name" ||
    sk_die "go build ./examples/skills/$name failed"
  sk_write_manifest "$stage/$name" "$stage/manifest.json"
  got=$(sk_manifest_field "$stage" name)
  [ "$got" = "$name" ] || sk_die "examples/skills/$name declares skill name '$got'; the folder and the sdk.New name must match"
  sk_commit "$stage" "$out"
done
