#!/usr/bin/env bash
# Every test of the project, as `make test` and CI run them. Steps print a
# header; any failure stops the run with a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

# What git sees before the tests, to check at the end that no test wrote
# into the source tree (a daemon run without --state-dir, for example).
tree_status() { git status --porcelain --untracked-files=all 2>/dev/null || true; }
tree_before=$(tree_status)

step "go vet (root and sdk modules)"
go vet ./...
(cd sdk && go vet ./...)

# staticcheck finds what vet does not (unused code, misused APIs). Pinned,
# and fetched from the module proxy like every other dependency.
step "staticcheck (root and sdk modules)"
staticcheck() { go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 "$@"; }
staticcheck ./...
(cd sdk && staticcheck ./...)

step "go test -race (sdk module)"
(cd sdk && go test -race -count=1 ./...)

# A module of its own, so that the root module does not depend on Helm and
# the Kubernetes API types (and ./... above does not descend into it).
step "deploy/helm chart renders and validates (helm v4 engine, strict decoding into the Kubernetes API types)"
(cd deploy/helm && go vet ./... && staticcheck ./... && go test -count=1 ./...)

step "browser for the console tests (Debian's chromium)"
if ! bash scripts/console-test.sh --install-only; then
  echo "test.sh: no Chromium: the browser tests in test/console will skip (run as root, or install chromium)" >&2
fi

step "the public npm MCP servers that the mcp runtime's tests run (scripts/install-mcp-servers.sh)"
if ! bash scripts/install-mcp-servers.sh >/dev/null; then
  echo "test.sh: the npm MCP servers are not installed: the tests of pkg/mcprt, pkg/loader and pkg/host that run them will skip (node and npm missing) or fail" >&2
fi

step "the JavaScript example skill (scripts/build-node-skill.sh: npm ci, esbuild)"
if ! bash scripts/build-node-skill.sh >/dev/null; then
  echo "test.sh: the JavaScript example skill is not built: TestNodeSkill (pkg/loader) and TestNodeSkillThroughDaemon (test/e2e) will skip (node and npm missing) or fail" >&2
fi

step "go test -race (root module: unit, integration with real skill processes, e2e and browser tests against a real daemon)"
go test -race -count=1 -timeout 20m ./...

# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can
# report a spurious "context deadline exceeded" at the -fuzztime boundary on a
# loaded machine (golang/go#75804, fixed in Go 1.27). 10000 runs take a few
# seconds per target here.
step "fuzz targets (10000 runs each, a few seconds)"
fuzz() { go test -run '^$' -fuzz="^$1\$" -fuzztime="${FUZZTIME:-10000x}" "$2"; }
while read -r target pkg; do
  [ -n "$target" ] && fuzz "$target" "$pkg"
done < <(grep -rl --include='*_test.go' '^func Fuzz' pkg sdk examples 2>/dev/null | while read -r f; do
  for t in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    d=$(dirname "$f")
    case "$d" in sdk*) ;; *) echo "$t ./$d" ;; esac
  done
done)

bfcl=../shared/data/bfcl
if [ -f "$bfcl/catalog.jsonl" ]; then
  step "prefilter recall on BFCL (fails below recall@5 0.89 or recall@1 0.66)"
  go run ./cmd/host eval-prefilter --catalog "$bfcl/catalog.jsonl" --queries "$bfcl/queries.jsonl" --min-recall5 0.89 --min-recall1 0.66
else
  step "prefilter recall on BFCL: skipped, $bfcl not found"
fi

if [ -f scripts/e2e.sh ]; then
  step "shell end-to-end: daemon, CLI and curl"
  bash scripts/e2e.sh
fi

if [ -f scripts/mcp-conformance.sh ]; then
  step "MCP conformance with the official TypeScript SDK"
  bash scripts/mcp-conformance.sh
fi

step "performance suite, quick mode (it measures and prints; a MISS is a figure, not a failure)"
bench_out=$(mktemp -d "${TMPDIR:-/tmp}/skillbench-ci.XXXXXX")
bash scripts/bench.sh --quick --out "$bench_out"
rm -rf "$bench_out"

if command -v protoc >/dev/null; then
  step "generated protobuf code is current"
  bash scripts/gen-proto.sh >/dev/null
  git diff --exit-code -- sdk/proto || { echo "sdk/proto is stale: run scripts/gen-proto.sh and commit" >&2; exit 1; }
fi

step "the tests left the source tree as they found it"
tree_after=$(tree_status)
if [ "$tree_after" != "$tree_before" ]; then
  echo "test.sh: the tests changed the source tree:" >&2
  diff <(echo "$tree_before") <(echo "$tree_after") >&2 || true
  exit 1
fi

step "all test steps passed"
