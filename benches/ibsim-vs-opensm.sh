#!/usr/bin/env bash
# Start-to-subnet-up under ibsim: `ibsm run --once` beside `opensm -o --maxsmps 64`, each against
# a fresh ibsim on the same fabric, in the same run. Needs ibsim-utils, opensm and a release build.
# Usage: benches/ibsim-vs-opensm.sh [levels] [radix]   (default: the 3-level tree of 24-port switches)
set -euo pipefail
levels=${1:-3}
radix=${2:-24}
root=$(cd "$(dirname "$0")/.." && pwd)
ibsm=$root/target/release/ibsm
[ -x "$ibsm" ] || { echo "build first: cargo build --release" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
"$ibsm" sim gen fat-tree --levels "$levels" --radix "$radix" -o fabric.net
# ibsim's table sizes must hold the fabric (nodes, switches, ports incl. switch port 0).
read -r nodes switches ports < <(awk '
    /^Switch/ {n++; s++; p += $2 + 1} /^(Hca|Ca)/ {n++; p += $2}
    END {print n, s, p}' fabric.net)
host=$(awk '/^(Hca|Ca)/ {gsub(/"/, "", $3); print $3; exit}' fabric.net)

run() { # name, command...
    local name=$1; shift
    export IBSIM_SOCKNAME="bench-$name-$$"
    ibsim -s -n -N "$nodes" -S "$switches" -P "$ports" fabric.net > "ibsim-$name.out" 2>&1 &
    local sim=$!
    sleep 2   # ibsim parses the fabric before it accepts clients
    local t0 t1
    t0=$(date +%s.%N)
    SIM_HOST=$host ibsim-run "$@" > "$name.out" 2>&1 || { echo "$name exited with $?:"; tail -5 "$name.out"; }
    t1=$(date +%s.%N)
    kill "$sim"; wait "$sim" 2>/dev/null || true
    printf '%-8s %6.2f s   %s\n' "$name" "$(echo "$t1 - $t0" | bc)" "$(grep -m1 -E 'subnet up|SUBNET UP' "$name.out" | cut -c1-400)"
}

echo "fabric: $levels-level fat tree of $radix-port switches: $switches switches, $((nodes - switches)) CAs; SM on $host"
run ibsm "$ibsm" run --once
run opensm opensm -o --maxsmps 64 -f "$work/opensm.log" -d 0
grep -m1 "SUBNET UP" opensm.log opensm.out 2>/dev/null || true
