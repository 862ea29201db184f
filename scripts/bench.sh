#!/usr/bin/env bash
# Performance suite (issue 8): builds the host, the benchmark skill, the MCP
# and net/rpc peers and the harness, runs cmd/skillbench once, and prints a
# markdown report: call latency and throughput of echo and a 64 KiB blob
# through (a) the HTTP API, (b) the registry's Go invoke, (c) bare go-plugin
# gRPC and (c2) net/rpc, (d) an MCP stdio server (official go-sdk), (e) an
# in-process call, and the floors (f) of one HTTP hop and (g) of an HTTP
# relay to a bare go-plugin skill; hot swap under load; 50-skill start-up and memory;
# registry search and memory at 10,000 tools; CPU profiles of the invoke path.
#
#   scripts/bench.sh [--quick] [--out DIR]
#
# --quick is the CI run (under 2 minutes); the full run takes 8 to 10 minutes
# for stabler medians. Results (results.md, results.json, *.pprof, and
# pprof -top listings) are kept in DIR (default: a new temp folder).
#
# Targets are printed as PASS or MISS. This script measures; it is not a
# gate: it exits 0 on a MISS and non-zero only if something fails to run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

quick=
out=
while [ $# -gt 0 ]; do
  case $1 in
  --quick) quick=--quick; shift ;;
  --out) out=$2; shift 2 ;;
  --out=*) out=${1#--out=}; shift ;;
  -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
  *) echo "bench.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/skillbench-out.XXXXXX")
mkdir -p "$out/bin"

echo "bench.sh: building into $out/bin" >&2
go build -o "$out/bin/host" ./cmd/host
# Skills (and the MCP and net/rpc peers, alike) are built the way
# scripts/build-skills.sh builds them: stripped, so the start-up figures are
# those of the binaries a tree holds.
skill_build=(env CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w")
"${skill_build[@]}" -o "$out/bin/benchskill" ./internal/benchskill
"${skill_build[@]}" -o "$out/bin/benchmcp" ./internal/benchmcp
"${skill_build[@]}" -o "$out/bin/benchrpc" ./internal/benchrpc
go build -o "$out/bin/skillbench" ./cmd/skillbench

cmdline="scripts/bench.sh${quick:+ $quick}"
"$out/bin/skillbench" ${quick:+"$quick"} --repo "$root" --bin "$out/bin" --out "$out" --command "$cmdline"

# Full pprof listings beside the profiles, for the write-up.
for p in "$out"/*.pprof; do
  [ -e "$p" ] || continue
  go tool pprof -top -nodecount=40 "$p" >"${p%.pprof}.top.txt" 2>/dev/null || true
  go tool pprof -top -cum -nodecount=80 "$p" >"${p%.pprof}.cum.txt" 2>/dev/null || true
done
echo >&2
echo "bench.sh: results in $out (results.md, results.json, *.pprof, *.top.txt, *.cum.txt)" >&2
echo "bench.sh: inspect a profile with: go tool pprof -http=: $out/cpu-invoke-echo.pprof" >&2
