#!/usr/bin/env bash
# Installs one skill version into a skills tree, atomically.
#
#   scripts/install-skill.sh BINARY [--skills DIR]
#       Runs BINARY --manifest, copies the binary under its skill name, writes
#       manifest.json with the binary's sha256.
#   scripts/install-skill.sh FOLDER [--skills DIR]
#       FOLDER already holds manifest.json and the binary it names: the
#       sha256 in the manifest must match the binary (otherwise the install is
#       refused); the folder's contents are copied and checked again.
#
# Either way the version is staged in DIR/.staging/ and renamed to
# DIR/<name>/<version>, so a watching host never sees a partial copy. An
# identical installed version (every file the same) is left alone; a
# different one is replaced.
# DIR defaults to the repository's skills/ folder.
set -euo pipefail

SK_PROG=install-skill # read by lib/install.sh
export SK_PROG
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=SCRIPTDIR/lib/install.sh
. "$root/scripts/lib/install.sh"

usage() {
  cat <<USAGE
usage: scripts/install-skill.sh BINARY_OR_DIR [--skills DIR]

Installs a skill binary, or a folder holding manifest.json and its binary,
as DIR/<name>/<version>/ (default DIR: $root/skills).
USAGE
}

skills="$root/skills"
src=
while [ $# -gt 0 ]; do
  case $1 in
  --skills)
    [ $# -ge 2 ] || sk_die "--skills needs a directory"
    skills=$2
    shift 2
    ;;
  --skills=*)
    skills=${1#--skills=}
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  -*) sk_die "unknown option $1 (see --help)" ;;
  *)
    [ -z "$src" ] || sk_die "only one BINARY_OR_DIR may be given (got '$src' and '$1')"
    src=$1
    shift
    ;;
  esac
done
if [ -z "$src" ]; then
  usage >&2
  exit 2
fi
[ -n "$skills" ] || sk_die "--skills must not be empty"
[ -e "$src" ] || sk_die "$src does not exist"
# A bare name would make "$src" --manifest search PATH, not run ./NAME.
case $src in */*) ;; *) src=./$src ;; esac

sk_init
mkdir -p -- "$skills" || sk_die "cannot create $skills"

if [ -d "$src" ]; then
  sk_verify_dir "$src" >/dev/null
  sk_stage "$skills"
  stage=$SK_STAGE
  cp -pR -- "$src/." "$stage/" || sk_die "cannot copy $src to $stage"
  chmod 755 "$stage"
  # sk_commit verifies the staged copy again: the source may have changed
  # while it was copied.
  sk_commit "$stage" "$skills"
elif [ -f "$src" ]; then
  [ -x "$src" ] || sk_die "$src is not executable"
  skeleton=$("$src" --manifest </dev/null) ||
    sk_die "$src --manifest failed; is it a skill built with the skillhost SDK?"
  name=$(printf '%s\n' "$skeleton" | jq -r '.name // empty' 2>/dev/null) ||
    sk_die "$src --manifest did not print JSON"
  [[ $name =~ $SK_NAME_RE ]] || sk_die "$src --manifest reports name '$name', which is not a valid skill name"
  sk_stage "$skills"
  stage=$SK_STAGE
  cp -- "$src" "$stage/$name" || sk_die "cannot copy $src to $stage"
  chmod 755 "$stage/$name"
  # The manifest comes from the copy, so its entrypoint is the installed name
  # and its sha256 is of the bytes that are installed.
  sk_write_manifest "$stage/$name" "$stage/manifest.json"
  sk_commit "$stage" "$skills"
else
  sk_die "$src is neither a file nor a folder"
fi
