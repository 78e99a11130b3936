#!/usr/bin/env bash
# SA stress under ibsim: OpenSM's own client `osmtest -f f -s1` (100,000 single-MAD
# PortInfoRecord queries) and `-s4` (100,000 PathRecord queries), answered by OpenSM and by ibsm
# on the same fabric, one after the other, on fresh ibsim instances.
#
# Each query waits for its answer before the next is sent, so the time is mostly umad2sim and
# ibsim carrying MADs; the SA's own work is a small part. The script prints osmtest's own
# "took" figure and verdict for each SM and stress type, per round.
#
# Usage: benches/sa-stress.sh [rounds] (default 1)
# Environment: IBSM = the ibsm binary (default: target/release/ibsm of this checkout).
# Needs ibsim-utils (ibsim, ibsim-run) and opensm (osmtest).
set -euo pipefail

rounds=${1:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
ibsm=${IBSM:-$root/target/release/ibsm}
net=$root/examples/fabrics/fat-tree-2l-k4.net
[ -x "$ibsm" ] || { echo "no ibsm binary at $ibsm (cargo build --release, or set IBSM)" >&2; exit 2; }
for tool in ibsim ibsim-run opensm osmtest; do
    command -v "$tool" > /dev/null || [ -x "/usr/sbin/$tool" ] || { echo "missing $tool" >&2; exit 2; }
done
export PATH=$PATH:/usr/sbin
work=$(mktemp -d)
trap 'kill $(jobs -p) 2> /dev/null; rm -rf "$work"' EXIT
cd "$work"

run() { # sm round
    local sm=$1 dir="$work/$1-$2" sim sm_pid
    mkdir -p "$dir/cache" && cd "$dir"
    export IBSIM_SOCKNAME=sa-stress-$$-$sm-$2
    ibsim -s -n "$net" > ibsim.out 2>&1 &
    sim=$!
    for _ in $(seq 50); do grep -q "ready" ibsim.out 2> /dev/null && break; sleep 0.1; done
    if [ "$sm" = opensm ]; then
        OSM_CACHE_DIR=$dir/cache OSM_TMP_DIR=$dir SIM_HOST=h0 ibsim-run opensm -f "$dir/opensm.log" > sm.out 2>&1 &
        sm_pid=$!
        # Up when the subnet list it writes after a sweep shows every link end ACT.
        for _ in $(seq 300); do
            all=$(grep -c 'LOG=' opensm-subnet.lst 2> /dev/null || true)
            act=$(grep -c 'LOG=ACT' opensm-subnet.lst 2> /dev/null || true)
            [ "${all:-0}" -gt 0 ] && [ "$all" = "$act" ] && break
            sleep 0.1
        done
    else
        SIM_HOST=h0 ibsim-run "$ibsm" run > sm.out 2>&1 &
        sm_pid=$!
        for _ in $(seq 300); do grep -q "subnet up" sm.out && break; sleep 0.1; done
    fi
    for s in 1 4; do
        SIM_HOST=h7 ibsim-run osmtest -f f -s$s > "osmtest-s$s.out" 2>&1 || true
        printf 'round %s  %-6s -s%s  %s  %s\n' "$2" "$sm" "$s" \
            "$(grep -o 'took [0-9:]*' "osmtest-s$s.out" | tail -1)" "$(grep -o 'PASS\|FAIL' "osmtest-s$s.out" | tail -1)"
    done
    # ibsim-run may leave the SM as its child: stop it by its command line (unique per run).
    pkill -f -- "opensm -f $dir/" 2> /dev/null || true
    kill "$sm_pid" 2> /dev/null || true
    wait "$sm_pid" 2> /dev/null || true
    kill "$sim" 2> /dev/null || true
    wait "$sim" 2> /dev/null || true
    cd "$work"
}

echo "fabric $net; ibsm $ibsm; $(opensm --version 2> /dev/null | grep -m1 OpenSM || echo OpenSM)"
for r in $(seq "$rounds"); do
    run opensm "$r"
    run ibsm "$r"
done
