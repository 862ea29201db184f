#!/usr/bin/env bash
# Shell end-to-end: build the host and the example skills, start the daemon
# on a free port, drive it with the CLI and curl the way an operator would,
# hot-swap a version in, and stop it cleanly. Exits non-zero on the first
# surprise.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "e2e: FAIL: $*" >&2; [ -f "$work/host.log" ] && tail -n 30 "$work/host.log" >&2; exit 1; }
ok() { echo "e2e: ok: $*"; }
# has PATTERN TEXT: grep on a captured string. Never `cmd | grep -q` here:
# under pipefail, grep -q exits at the first match and a writer still
# writing (curl on /metrics) dies of SIGPIPE, failing a check that passed.
has() { grep -q -- "$1" <<<"$2"; }

go build -o "$work/host" ./cmd/host
bash scripts/build-skills.sh --out "$work/skills" >/dev/null 2>&1 || fail "build-skills.sh"
host="$work/host"

"$host" validate "$work/skills" >/dev/null || fail "validate rejected the example tree"
ok "host validate accepts the example tree"

"$host" serve --skills "$work/skills" --listen 127.0.0.1:0 --addr-file "$work/addr" \
  --state-dir "$work/state" --grace 2s --debounce 100ms >"$work/host.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -s "$work/addr" ] && break; sleep 0.1; done
[ -s "$work/addr" ] || fail "daemon did not listen"
addr=$(cat "$work/addr")
export SKILLHOST_ADDR="http://$addr"
for _ in $(seq 1 300); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$SKILLHOST_ADDR/readyz")" = 200 ] && break
  sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$SKILLHOST_ADDR/readyz")" = 200 ] || fail "daemon never became ready (/readyz)"
ok "daemon ready on $addr"

json='Content-Type: application/json'
out=$(curl -sf -X POST "$SKILLHOST_ADDR/v1/tools/calc.evaluate/invoke" -H "$json" -d '{"arguments":{"expression":"6*7"}}') \
  || fail "curl invoke"
has '"result":42' "$out" || fail "calc answered $out"
ok "curl invoke: calc.evaluate(6*7) = 42"

code=$(curl -s -o "$work/err.json" -w '%{http_code}' -X POST "$SKILLHOST_ADDR/v1/tools/calc.evaluate/invoke" -H "$json" -d '{"arguments":{"nope":1}}')
[ "$code" = 400 ] && grep -q '"code":"invalid_arguments"' "$work/err.json" || fail "bad arguments gave $code $(cat "$work/err.json")"
ok "curl invoke with bad arguments: 400 invalid_arguments"

has '^calc .*active' "$("$host" skills)" || fail "host skills"
has 'policy\.' "$("$host" tools -q "查询报销制度" --limit 1)" || fail "host tools -q (Chinese)"
has '"words": 3' "$("$host" call textkit.count '{"text":"hello 世界"}')" || fail "host call"
has 'hello-world' "$(echo '{"text":"Hello World"}' | "$host" call textkit.slugify -)" || fail "host call from stdin"
set +e
"$host" call calc.evaluate '{"expression":"1/0"}' >/dev/null 2>&1; [ $? = 1 ] || fail "tool error exit code"
"$host" call >/dev/null 2>&1; [ $? = 2 ] || fail "usage exit code"
"$host" skills --addr http://127.0.0.1:1 >/dev/null 2>&1; [ $? = 3 ] || fail "unreachable exit code"
set -e
ok "CLI: skills, tools, call, exit codes 1/2/3"

"$host" disable textkit >/dev/null
has 'textkit\.' "$(curl -s "$SKILLHOST_ADDR/v1/tools")" && fail "disabled tools still listed"
"$host" enable textkit >/dev/null
"$host" call textkit.count '{"text":"x"}' >/dev/null || fail "enable"
ok "CLI: disable / enable"

# A hot swap while the event stream is followed.
"$host" events --json >"$work/events.log" 2>&1 &
evpid=$!
sleep 0.5
stage="$work/skills/.staging/calc-1.1.0"
mkdir -p "$stage"
cp "$work/skills/calc/1.0.0/calc" "$stage/calc"
sed 's/"version": "1.0.0"/"version": "1.1.0"/' "$work/skills/calc/1.0.0/manifest.json" >"$stage/manifest.json"
# The binary says it is 1.0.0, so this version must fail and 1.0.0 keep serving.
mv "$stage" "$work/skills/calc/1.1.0"
for _ in $(seq 1 100); do has '1.1.0 .*failed' "$("$host" skills calc)" && break; sleep 0.1; done
has '1.1.0 .*failed' "$("$host" skills calc)" || fail "a version whose binary disagrees with its manifest was not marked failed"
"$host" call calc.evaluate '{"expression":"1+1"}' >/dev/null || fail "old version stopped serving after a bad swap"
ok "bad new version: failed with a reason, old version keeps serving"
"$host" pin calc 1.0.0 >/dev/null && "$host" unpin calc >/dev/null || fail "pin/unpin"
"$host" rescan >/dev/null || fail "rescan"
kill -HUP "$pid"
sleep 0.3
kill "$evpid" 2>/dev/null || true
wait "$evpid" 2>/dev/null || true
grep -q '"event":"state"' "$work/events.log" && grep -q '"state":"failed"' "$work/events.log" || fail "events stream: $(head -c 400 "$work/events.log")"
ok "events stream, pin/unpin, rescan, SIGHUP"

# scripts/install-skill.sh, as the README's tour uses it: a folder (manifest
# and binary) into the served tree, then a bare SDK binary into a new tree.
go build -o "$work/testskill" ./internal/testskill
src="$work/probe-src"
mkdir -p "$src"
cp "$work/testskill" "$src/skill"
sum=$(sha256sum "$src/skill" | cut -d' ' -f1)
cat >"$src/manifest.json" <<JSON
{"manifest_version": 1, "name": "probe", "version": "2.0.0", "description": "e2e probe.",
 "entrypoint": "skill", "sha256": "$sum", "env": {"TESTSKILL_NAME": "probe", "TESTSKILL_VERSION": "2.0.0"}}
JSON
bash scripts/install-skill.sh "$src" --skills "$work/skills" >"$work/install.log" 2>&1 || fail "install-skill.sh FOLDER: $(cat "$work/install.log")"
probe=""
for _ in $(seq 1 100); do
  probe=$("$host" call probe.echo '{}' 2>&1) || true
  has '"version": *"2.0.0"' "$probe" && break
  sleep 0.1
done
has '"version": *"2.0.0"' "$probe" || fail "a version installed with install-skill.sh is not served: $probe"
go build -o "$work/textkit" ./examples/skills/textkit
bash scripts/install-skill.sh "$work/textkit" --skills "$work/tree2" >/dev/null 2>&1 || fail "install-skill.sh BINARY"
"$host" validate "$work/tree2" >/dev/null || fail "install-skill.sh BINARY wrote a version host validate refuses"
[ -f "$work/tree2/textkit/1.0.0/manifest.json" ] || fail "install-skill.sh BINARY: no textkit/1.0.0"
ok "install-skill.sh: a folder hot-swapped in and served, a binary installed into a new tree"

metrics=$(curl -sf "$SKILLHOST_ADDR/metrics") || fail "GET /metrics"
has '^skillhost_calls_total{outcome="ok",tool="calc.evaluate"}' "$metrics" || fail "metrics: no ok calls of calc.evaluate counted"
ok "metrics count calls"

kill -TERM "$pid"
for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then fail "daemon did not stop on SIGTERM"; fi
wait "$pid" && status=0 || status=$?
pid=""
[ "$status" = 0 ] || fail "daemon exited $status"
grep -q 'stopped' "$work/host.log" || fail "no clean stop in the log"
ok "SIGTERM: drained and exited 0"
echo "e2e: all checks passed"
