#!/usr/bin/env bash
# The bring-up acceptance check of the core issue, side by side in one run: on a degraded 3-level
# fat tree of 16-port switches (10% of the hosts and two switches missing, four links cut), the
# wall time from start to exit of `ibsm run --once` against OpenSM's (`--maxsmps 64`) from start
# to its "SUBNET UP" log line, each against a fresh ibsim, ROUNDS times (default 3), and the ratio
# of the medians. OpenSM's time is read from the microsecond timestamp of its own log line, so
# the script's polling does not add to it.
#
# Usage: benches/ibsim-bringup-ratio.sh [rounds] [radix] [seed]
# Needs ibsim-utils, opensm and a release build (IBSM=path overrides target/release/ibsm).
set -euo pipefail
rounds=${1:-3}
radix=${2:-16}
seed=${3:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
ibsm=${IBSM:-$root/target/release/ibsm}
[ -x "$ibsm" ] || { echo "build first: cargo build --release" >&2; exit 2; }
work=$(mktemp -d)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"

"$ibsm" sim gen fat-tree --levels 3 --radix "$radix" --remove-switches 2 --remove-links 4 --seed "$seed" \
    -o full.net > /dev/null
# Drop every tenth host (its block and the switch ports cabled to it).
python3 - full.net fabric.net <<'EOF'
import re, sys
blocks = open(sys.argv[1]).read().split("\n\n")
hosts = [i for i, b in enumerate(blocks) if re.search(r'^(Hca|Ca)\s', b, re.M)]
gone = set()
for k, i in enumerate(hosts):
    if k % 10 == 9:
        gone.add(re.search(r'^(?:Hca|Ca)\s+\d+\s+"([^"]+)"', blocks[i], re.M).group(1))
        blocks[i] = None
out = []
for b in blocks:
    if b is None:
        continue
    lines = [l for l in b.split("\n") if not any(f'"{g}"[' in l for g in gone)]
    out.append("\n".join(lines))
open(sys.argv[2], "w").write("\n\n".join(out))
EOF
"$ibsm" sim info fabric.net
read -r nodes switches ports < <(awk '
    /^Switch/ {n++; s++; p += $2 + 1} /^(Hca|Ca)/ {n++; p += $2}
    END {print n, s, p}' fabric.net)
host=$(awk '/^(Hca|Ca)/ {gsub(/"/, "", $3); print $3; exit}' fabric.net)

start_ibsim() { # name
    export IBSIM_SOCKNAME="ratio-$1-$$"
    ibsim -s -n -N "$nodes" -S "$switches" -P "$ports" fabric.net > "ibsim-$1.out" 2>&1 &
    sim=$!
    until grep -q "Network simulator ready" "ibsim-$1.out" 2>/dev/null; do
        kill -0 "$sim" 2>/dev/null || { echo "ibsim died:"; cat "ibsim-$1.out"; exit 1; }
        sleep 0.05
    done
}
stop_ibsim() { kill "$sim" 2>/dev/null || true; wait "$sim" 2>/dev/null || true; }

ibsm_times=()
opensm_times=()
for r in $(seq 1 "$rounds"); do
    start_ibsim "ibsm-$r"
    t0=$(date +%s.%N)
    SIM_HOST=$host ibsim-run "$ibsm" run --once > "ibsm-$r.out" 2> "ibsm-$r.err" || {
        echo "ibsm exited with $?:"; tail -5 "ibsm-$r.err"; }
    t1=$(date +%s.%N)
    stop_ibsim
    ibsm_times+=("$(echo "$t1 - $t0" | bc)")
    echo "round $r ibsm   $(printf '%6.3f' "${ibsm_times[-1]}") s  $(cut -c1-240 "ibsm-$r.out")"

    start_ibsim "opensm-$r"
    t0=$(date +%s.%N)
    # -o: one sweep, then exit (its SUBNET UP line is the same as a long-running OpenSM's).
    SIM_HOST=$host timeout 120 ibsim-run opensm -o --maxsmps 64 -f "$work/opensm-$r.log" -d 0 \
        > "opensm-$r.out" 2>&1 || true
    stop_ibsim
    grep -q "SUBNET UP" "opensm-$r.log" || { echo "no SUBNET UP from OpenSM:"; tail -5 "opensm-$r.log"; exit 1; }
    # "Nov 25 04:10:23 123456 [...] 0x02 -> SUBNET UP": seconds plus microseconds.
    line=$(grep -m1 "SUBNET UP" "opensm-$r.log")
    up=$(date -d "$(echo "$line" | awk '{print $1, $2, $3}')" +%s)
    usec=$(echo "$line" | awk '{print $4}')
    opensm_times+=("$(echo "$up + $usec / 1000000 - $t0" | bc -l)")
    echo "round $r opensm $(printf '%6.3f' "${opensm_times[-1]}") s  (start to SUBNET UP; $(grep -c ERR "opensm-$r.log" || true) ERR lines)"
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mi=$(median "${ibsm_times[@]}")
mo=$(median "${opensm_times[@]}")
printf 'median ibsm %.3f s, OpenSM %.3f s, ratio %.2f\n' "$mi" "$mo" "$(echo "$mi / $mo" | bc -l)"
