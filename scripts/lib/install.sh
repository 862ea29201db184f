# shellcheck shell=bash
# Shared by scripts/build-skills.sh and scripts/install-skill.sh: write a
# skill version's manifest.json and install the version folder atomically.
#
# Sourced, not run. The caller sets SK_PROG (its name, for messages), runs
# under `set -euo pipefail` and calls sk_init once. The protocol:
#
#   sk_stage SKILLS; stage=$SK_STAGE    # SKILLS/.staging/new-XXXXXXXX, same filesystem
#   ... put the binary and manifest.json in $stage ...
#   sk_commit "$stage" SKILLS           # verify, then rename to SKILLS/<name>/<version>
#
# The host ignores folders whose names start with "." so it never sees a
# half-written version, and rename(2) makes the finished one appear at once.

SK_NAME_RE='^[a-z][a-z0-9]*([_-][a-z0-9]+)*$'
SK_SEMVER_RE='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
SK_CLEANUP=()
SK_MV_T=()

sk_log() { printf '%s: %s\n' "${SK_PROG:-install}" "$*" >&2; }
sk_die() {
  printf '%s: error: %s\n' "${SK_PROG:-install}" "$*" >&2
  exit 1
}

# sk_cleanup removes staging folders left by a failed run (EXIT trap).
sk_cleanup() {
  local p
  for p in "${SK_CLEANUP[@]+"${SK_CLEANUP[@]}"}"; do
    [ -e "$p" ] && rm -rf -- "$p"
  done
  return 0
}

sk_init() {
  trap sk_cleanup EXIT
  trap 'exit 130' INT TERM
  sk_need_jq
  command -v sha256sum >/dev/null 2>&1 || command -v shasum >/dev/null 2>&1 ||
    sk_die "sha256sum (coreutils) or shasum is required"
  # GNU mv -T refuses to move a folder *into* a target that appeared
  # meanwhile; other mv implementations get a check after the rename.
  if mv --version >/dev/null 2>&1; then SK_MV_T=(-T); fi
}

# sk_need_jq makes sure jq is available, installing it with apt-get when
# running as root (and only then).
sk_need_jq() {
  command -v jq >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    sk_log "jq not found; installing it with apt-get install -y jq"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y jq >/dev/null; then
      apt-get update >/dev/null || sk_die "apt-get update failed while installing jq"
      DEBIAN_FRONTEND=noninteractive apt-get install -y jq >/dev/null || sk_die "could not install jq with apt-get"
    fi
    command -v jq >/dev/null 2>&1 || sk_die "jq still not found after apt-get install"
    return 0
  fi
  sk_die "jq is required to write manifest.json; install it (e.g. 'sudo apt-get install jq') and retry"
}

# sk_sha256 FILE prints the hex SHA-256 of FILE.
sk_sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum -- "$1" | cut -d' ' -f1
  else
    shasum -a 256 -- "$1" | cut -d' ' -f1
  fi
}

# sk_stage SKILLS creates a fresh staging folder under SKILLS/.staging and
# sets SK_STAGE to it; it is removed on exit unless committed. (It sets a
# variable rather than printing because $(…) would run it in a subshell and
# lose the cleanup registration.)
sk_stage() {
  local skills=$1
  mkdir -p -- "$skills/.staging" || sk_die "cannot create $skills/.staging"
  SK_STAGE=$(mktemp -d "$skills/.staging/new-XXXXXXXX") || sk_die "cannot create a staging folder in $skills/.staging"
  SK_CLEANUP+=("$SK_STAGE")
  chmod 755 "$SK_STAGE"
}

# sk_write_manifest BINARY OUT runs BINARY --manifest and writes the
# skeleton, completed with the binary's sha256, to OUT. The binary must sit
# where it will be installed, so that the entrypoint it reports is its name.
sk_write_manifest() {
  local bin=$1 out=$2 skeleton sha entry
  skeleton=$("$bin" --manifest </dev/null) ||
    sk_die "$bin --manifest failed; is it a skill built with the skillhost SDK?"
  printf '%s\n' "$skeleton" | jq -e 'type == "object"' >/dev/null 2>&1 ||
    sk_die "$bin --manifest did not print a JSON object"
  entry=$(printf '%s\n' "$skeleton" | jq -r '.entrypoint // empty')
  [ "$entry" = "$(basename -- "$bin")" ] ||
    sk_die "$bin --manifest reports entrypoint '$entry', expected '$(basename -- "$bin")'"
  sha=$(sk_sha256 "$bin")
  printf '%s\n' "$skeleton" | jq --arg sha "$sha" '. + {sha256: $sha}' >"$out" ||
    sk_die "cannot write $out"
}

# sk_manifest_field DIR FIELD prints one string field of DIR/manifest.json.
sk_manifest_field() {
  jq -r --arg f "$2" '.[$f] | if type == "string" then . else empty end' "$1/manifest.json"
}

# sk_verify_dir DIR checks that DIR holds a manifest.json whose name and
# version are well formed and whose sha256 matches its entrypoint, an
# executable regular file inside DIR (bin/calc is fine; ../calc is not). It prints "NAME VERSION".
sk_verify_dir() {
  local dir=$1 name version entry want got
  [ -f "$dir/manifest.json" ] || sk_die "$dir has no manifest.json"
  jq -e 'type == "object"' "$dir/manifest.json" >/dev/null 2>&1 || sk_die "$dir/manifest.json is not a JSON object"
  name=$(sk_manifest_field "$dir" name)
  version=$(sk_manifest_field "$dir" version)
  entry=$(sk_manifest_field "$dir" entrypoint)
  want=$(sk_manifest_field "$dir" sha256)
  [[ $name =~ $SK_NAME_RE ]] || sk_die "$dir/manifest.json: name '$name' must match $SK_NAME_RE"
  [[ $version =~ $SK_SEMVER_RE ]] || sk_die "$dir/manifest.json: version '$version' is not a semantic version such as 1.0.0"
  case $entry in
  "" | . | .. | /* | */ | ../* | */../* | */.. | manifest.json)
    sk_die "$dir/manifest.json: entrypoint '$entry' must be a relative path to a file inside the folder (no '..', not absolute)" ;;
  esac
  if [ ! -f "$dir/$entry" ] || [ -L "$dir/$entry" ]; then
    sk_die "$dir/manifest.json: entrypoint $entry must be a regular file in $dir (missing, or a symlink)"
  fi
  [ -x "$dir/$entry" ] || sk_die "$dir/$entry is not executable"
  [[ $want =~ ^[0-9a-f]{64}$ ]] || sk_die "$dir/manifest.json: sha256 '$want' is not 64 lowercase hex digits"
  got=$(sk_sha256 "$dir/$entry")
  [ "$got" = "$want" ] ||
    sk_die "refusing $dir: sha256 of $entry is $got but manifest.json says $want (binary changed or still being copied?)"
  printf '%s %s\n' "$name" "$version"
}

# sk_tree_list DIR prints one line per entry below DIR, sorted by path: its
# permissions and path, plus the sha256 of a file or the target of a
# symlink. Two folders with the same listing hold the same files.
sk_tree_list() {
  local p kind
  (cd -- "$1" && find . -mindepth 1 -print0 | LC_ALL=C sort -z) | while IFS= read -r -d '' p; do
    # Only the mode column is kept, so odd file names do no harm.
    # shellcheck disable=SC2012
    kind=$(ls -ld -- "$1/$p" | cut -c1-10)
    if [ -L "$1/$p" ]; then
      printf '%s %s -> %s\n' "$kind" "$p" "$(readlink -- "$1/$p")"
    elif [ -f "$1/$p" ]; then
      printf '%s %s %s\n' "$kind" "$p" "$(sk_sha256 "$1/$p")"
    else
      printf '%s %s\n' "$kind" "$p"
    fi
  done
}

# sk_commit STAGE SKILLS verifies STAGE and renames it to
# SKILLS/<name>/<version>. An identical installed version (every file the
# same: contents, permissions, symlinks) is left alone; a different one is
# replaced: renamed aside into .staging, the new one renamed in, the old one
# deleted.
sk_commit() {
  local stage=$1 skills=$2 nv name version target old sha
  nv=$(sk_verify_dir "$stage")
  name=${nv% *}
  version=${nv#* }
  sha=$(sk_manifest_field "$stage" sha256)
  target="$skills/$name/$version"
  mkdir -p -- "$skills/$name" || sk_die "cannot create $skills/$name"
  # The host's StrictModes refuses group- or world-writable folders and
  # files (anyone who can write them can run code as the host), so do not
  # leave them so under a umask of 002.
  chmod go-w -- "$skills" "$skills/$name" 2>/dev/null || true
  find "$stage" -exec chmod go-w {} + 2>/dev/null || true

  if [ -e "$target" ] || [ -L "$target" ]; then
    if [ -f "$target/manifest.json" ] && cmp -s "$target/manifest.json" "$stage/manifest.json" &&
      (sk_verify_dir "$target" >/dev/null 2>&1) &&
      [ "$(sk_tree_list "$target")" = "$(sk_tree_list "$stage")" ]; then
      rm -rf -- "$stage"
      sk_log "$name $version is already installed in $target (sha256 ${sha:0:12}…, every file the same); unchanged"
      return 0
    fi
    old=$(mktemp -d "$skills/.staging/old-$name-$version-XXXXXXXX") || sk_die "cannot create a folder in $skills/.staging"
    SK_CLEANUP+=("$old")
    mv -- "$target" "$old/" || sk_die "cannot move the installed $target aside"
    if ! mv "${SK_MV_T[@]+"${SK_MV_T[@]}"}" -- "$stage" "$target"; then
      mv "${SK_MV_T[@]+"${SK_MV_T[@]}"}" -- "$old/$version" "$target" 2>/dev/null || true
      sk_die "cannot rename $stage to $target; the previous version was put back"
    fi
    rm -rf -- "$old"
    sk_log "replaced $name $version in $target (sha256 ${sha:0:12}…)"
  else
    mv "${SK_MV_T[@]+"${SK_MV_T[@]}"}" -- "$stage" "$target" ||
      sk_die "cannot rename $stage to $target (did another install create it meanwhile?)"
    sk_log "installed $name $version in $target (sha256 ${sha:0:12}…)"
  fi
  # Without mv -T a target created meanwhile would swallow the stage.
  if [ ! -f "$target/manifest.json" ] || [ -e "$target/$(basename -- "$stage")" ]; then
    sk_die "$target is not the folder just installed; check $skills for a concurrent install"
  fi
}
