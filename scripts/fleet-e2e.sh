#!/usr/bin/env bash
# A fleet on one machine, loopback only, with real programs: Debian's etcd
# (etcd-server), OCI registry (docker-registry) and load balancer (haproxy,
# health-checking /readyz), and three `host serve` daemons. Under load
# through haproxy it pushes versions, pins, disables, pushes a tampered
# artifact, kill -9s a host and restarts it, and prints what it measured.
# The quick, in-process version of the same checks is `go test ./pkg/host
# -run Fleet` (part of make test); this is the longer one.
#
#   scripts/fleet-e2e.sh [--pushes N]     (default 5)
#
# Needs: etcd, docker-registry, haproxy, curl, jq, go (as root, the script
# installs the first three with apt-get). Exits 1 if a check fails or a call
# fails outside the kill -9 phase.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "fleet-e2e: $*" >&2; exit 1; }
pushes=5
while [ $# -gt 0 ]; do
  case $1 in
  --pushes) pushes=$2; shift 2 ;;
  *) die "unknown argument $1 (usage: scripts/fleet-e2e.sh [--pushes N])" ;;
  esac
done

need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v docker-registry >/dev/null || need+=(docker-registry)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v jq >/dev/null || need+=(jq)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "need ${need[*]}: sudo apt-get install -y ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fleet-e2e.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
waitfor() { # seconds, command...
  local until=$(($(date +%s) + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$until" ] || return 1
    sleep 0.05
  done
}

echo "fleet-e2e: building into $tmp" >&2
(cd "$root" && go build -o "$tmp/host" ./cmd/host && go build -o "$tmp/testskill" ./internal/testskill)

# A version folder of the test skill "alpha" (extra manifest env as JSON).
version() { # dir version [env-json]
  local d=$1/alpha/$2
  mkdir -p "$d"
  cp "$tmp/testskill" "$d/skill"
  jq -n --arg v "$2" --arg sum "$(sha256sum "$d/skill" | cut -d' ' -f1)" --argjson env "${3:-{\}}" \
    '{manifest_version: 1, name: "alpha", version: $v, description: "Test skill alpha.", entrypoint: "skill",
      sha256: $sum, tags: ["test"], env: ({TESTSKILL_NAME: "alpha", TESTSKILL_VERSION: $v} + $env)}' >"$d/manifest.json"
  echo "# alpha $2" >"$d/SKILL.md"
}

ep=$(port) pp=$(port) rp=$(port) lb=$(port)
etcd --name e2e --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$ep" --advertise-client-urls "http://127.0.0.1:$ep" \
  --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
  --initial-cluster "e2e=http://127.0.0.1:$pp" >"$tmp/etcd.log" 2>&1 &
pids+=($!)
cat >"$tmp/registry.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $tmp/registry}}
http: {addr: 127.0.0.1:$rp}
YML
docker-registry serve "$tmp/registry.yml" >"$tmp/registry.log" 2>&1 &
pids+=($!)
waitfor 20 curl -sf "http://127.0.0.1:$ep/health" || die "etcd did not start: $(tail -3 "$tmp/etcd.log")"
waitfor 20 curl -sf "http://127.0.0.1:$rp/v2/" || die "the registry did not start: $(tail -3 "$tmp/registry.log")"

state="etcd://127.0.0.1:$ep/fleet"
artifacts="oci+http://127.0.0.1:$rp/skills"
declare -A hport hpid
start_host() { # i
  local i=$1
  "$tmp/host" serve --skills "$tmp/h$i" --listen "127.0.0.1:${hport[$i]}" --state-dir "$tmp/s$i" \
    --state "$state" --artifacts "$artifacts" --fleet-id "h$i" --fleet-lease 5s --log-level warn \
    >>"$tmp/h$i.log" 2>&1 &
  hpid[$i]=$!
  pids+=($!)
}
for i in 1 2 3; do
  hport[$i]=$(port)
  version "$tmp/h$i" 1.0.0
  start_host "$i"
done
for i in 1 2 3; do
  waitfor 30 curl -sf "http://127.0.0.1:${hport[$i]}/readyz" || die "host h$i did not get ready: $(tail -5 "$tmp/h$i.log")"
done

cat >"$tmp/haproxy.cfg" <<CFG
global
  maxconn 256
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  retries 3
  option redispatch
frontend fe
  bind 127.0.0.1:$lb
  default_backend hosts
backend hosts
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
  http-check expect status 200
  default-server inter 200ms fall 1 rise 2
  server h1 127.0.0.1:${hport[1]} check
  server h2 127.0.0.1:${hport[2]} check
  server h3 127.0.0.1:${hport[3]} check
CFG
"$haproxy" -q -f "$tmp/haproxy.cfg" -db >"$tmp/haproxy.log" 2>&1 &
pids+=($!)
served() { curl -s -X POST "http://127.0.0.1:$1/v1/tools/alpha.echo/invoke" -H 'Content-Type: application/json' -d '{"arguments":{"msg":"hi"}}' | jq -r '.version // ""'; }
all_serve() { # version hosts...
  local want=$1; shift
  for i in "$@"; do [ "$(served "${hport[$i]}")" = "$want" ] || return 1; done
}
waitfor 20 all_serve 1.0.0 1 2 3 || die "the hosts do not serve 1.0.0"
waitfor 10 curl -sf "http://127.0.0.1:$lb/readyz" || die "haproxy does not answer"

# Load: 4 callers through haproxy; each call's HTTP code goes to a file per phase.
phase=$tmp/phase
echo start >"$phase"
for w in 1 2 3 4; do
  (while [ -f "$phase" ]; do
    p=$(cat "$phase" 2>/dev/null || echo end)
    code=$(curl -s -o "$tmp/body.$w" -w '%{http_code}' -X POST "http://127.0.0.1:$lb/v1/tools/alpha.echo/invoke" \
      -H 'Content-Type: application/json' -d '{"arguments":{"msg":"hi"}}' || true)
    echo "$code" >>"$tmp/calls.$p"
    [ "$code" = 200 ] || { echo "$p $code $(head -c 300 "$tmp/body.$w" 2>/dev/null | tr -s "\n" " ")" >>"$tmp/errors"; }
  done) &
  pids+=($!)
done
failed() { grep -vc '^200$' "$tmp/calls.$1" 2>/dev/null || true; }
total() { wc -l <"$tmp/calls.$1" 2>/dev/null || echo 0; }

fail=0
check() { if "$@"; then :; else echo "FAIL: $*" >&2; fail=1; fi; }
host_cli() { "$tmp/host" "$@" --addr "http://127.0.0.1:${hport[1]}"; }

echo push >"$phase"
src=$tmp/src
times=()
for n in $(seq 2 $((pushes + 1))); do
  version "$src" "$n.0.0"
  t0=$(now)
  "$tmp/host" push --state "$state" --artifacts "$artifacts" "$src/alpha/$n.0.0" >/dev/null
  waitfor 120 all_serve "$n.0.0" 1 2 3 || { echo "FAIL: push $n.0.0 never served everywhere" >&2; fail=1; break; }
  times+=("$(since "$t0")")
done
digests=$(host_cli fleet --json | jq '.skills.alpha.digests | length')
check [ "$digests" = 1 ]

echo decisions >"$phase"
last="$((pushes + 1)).0.0"
t0=$(now); "$tmp/host" pin alpha 1.0.0 --addr "http://127.0.0.1:${hport[2]}" >/dev/null 2>&1 || true
# 1.0.0 is on every host (installed by hand), so the pin can converge.
check waitfor 10 all_serve 1.0.0 1 2 3; pin_time=$(since "$t0")
"$tmp/host" unpin alpha --addr "http://127.0.0.1:${hport[3]}" >/dev/null
check waitfor 10 all_serve "$last" 1 2 3
echo disable >"$phase"
t0=$(now); "$tmp/host" disable alpha --addr "http://127.0.0.1:${hport[1]}" >/dev/null
check waitfor 10 all_serve "" 1 2 3; disable_time=$(since "$t0")
"$tmp/host" enable alpha --addr "http://127.0.0.1:${hport[2]}" >/dev/null
check waitfor 10 all_serve "$last" 1 2 3

echo tamper >"$phase"
# Upload the artifact under a scratch fleet, corrupt its layer at rest in
# the registry's storage, then make it this fleet's desired version: the
# same folder packs to the same digest, so the registry serves the
# corrupted bytes.
bad="$((pushes + 2)).0.0"
version "$src" "$bad"
"$tmp/host" push --state "etcd://127.0.0.1:$ep/scratch" --artifacts "$artifacts" "$src/alpha/$bad" >/dev/null
layer=$(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://127.0.0.1:$rp/v2/skills/manifests/alpha-$bad" | jq -r '.layers[0].digest')
data=$(find "$tmp/registry" -path "*/blobs/sha256/*/${layer#sha256:}/data")
printf 'X' | dd of="$data" bs=1 seek=1000 conv=notrunc status=none
"$tmp/host" push --state "$state" --artifacts "$artifacts" "$src/alpha/$bad" >/dev/null
refused() { [ "$(host_cli fleet --json | jq "[.hosts[].artifacts.alpha | select(.error != null and (.error | test(\"digest\")))] | length")" = 3 ]; }
check waitfor 20 refused
check all_serve "$last" 1 2 3

echo kill >"$phase"
kill -9 "${hpid[3]}"
wait "${hpid[3]}" 2>/dev/null || true
t0=$(now)
two() { [ "$(host_cli fleet --json | jq '.hosts | length')" = 2 ]; }
check waitfor 30 two; leave_time=$(since "$t0")
# A push while h3 is down, then h3 comes back and catches up.
next="$((pushes + 3)).0.0"
version "$src" "$next"
"$tmp/host" push --state "$state" --artifacts "$artifacts" "$src/alpha/$next" >/dev/null
check waitfor 60 all_serve "$next" 1 2
echo restart >"$phase"
start_host 3
check waitfor 60 all_serve "$next" 1 2 3
rm -f "$phase"
sleep 0.5

sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
max=$(echo "$sorted" | tail -1)
printf 'push → all three serving: median %.2f s, max %.2f s over %d pushes (settle 3 s per host, one host at a time)\n' "$median" "$max" "${#times[@]}"
printf 'pin converged on three hosts in %.3f s, disable in %.3f s\n' "$pin_time" "$disable_time"
printf 'kill -9 → left the fleet after %.2f s (lease 5 s)\n' "$leave_time"
for p in push decisions disable tamper kill restart; do
  printf 'calls during %-9s %6s, failed %s\n' "$p:" "$(total "$p")" "$(failed "$p")"
done
for p in push decisions tamper kill restart; do
  [ "$(failed "$p")" = 0 ] || echo "  answers during $p: $(sort "$tmp/calls.$p" | uniq -c | tr '\n' ' ')"
done
grep -v '^disable ' "$tmp/errors" 2>/dev/null | sort | uniq -c | head -5 | sed 's/^/  /' || true
for p in push decisions disable tamper restart; do
  # A disabled skill answers 404 by design; its phase is not counted.
  [ "$p" = disable ] && continue
  [ "$(failed "$p")" = 0 ] || { echo "FAIL: $(failed "$p") calls failed during $p" >&2; fail=1; }
done
[ "$fail" = 0 ] && echo "fleet-e2e: PASS" || { echo "fleet-e2e: FAIL (logs were in $tmp)" >&2; exit 1; }
