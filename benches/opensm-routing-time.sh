#!/usr/bin/env bash
# OpenSM's routing phase on a generated fabric under ibsim, per engine: the time between OpenSM's
# log lines "ucast_mgr_route: building routing with ..." and "... tables configured on all
# switches" (lid matrices plus the engine). Needs ibsim-utils, opensm and a release build of ibsm.
# Usage: benches/opensm-routing-time.sh [levels] [radix] [engines...]
# With FABRIC=FILE.net in the environment, that fabric is used instead of a generated fat tree.
set -euo pipefail
levels=${1:-3}
radix=${2:-24}
shift 2 2>/dev/null || true
engines=("${@:-ftree updn minhop}")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
if [ -n "${FABRIC:-}" ]; then
    cp "$FABRIC" fabric.net
else
    "$root/target/release/ibsm" sim gen fat-tree --levels "$levels" --radix "$radix" -o fabric.net 2>/dev/null
fi
read -r nodes switches ports < <(awk '
    /^Switch/ {n++; s++; p += $2 + 1} /^(Hca|Ca)/ {n++; p += $2}
    END {print n, s, p}' fabric.net)
host=$(awk '/^(Hca|Ca)/ {gsub(/"/, "", $3); print $3; exit}' fabric.net)
for e in ${engines[@]}; do
    export IBSIM_SOCKNAME="osmroute-$e-$$"
    ibsim -s -n -N "$nodes" -S "$switches" -P "$ports" fabric.net > "ibsim-$e.out" 2>&1 &
    sim=$!
    sleep 2
    SIM_HOST=$host /usr/bin/time -f %M -o "rss-$e.txt" ibsim-run opensm -o --maxsmps 64 -R "$e" -D 0x07 -f "$work/osm-$e.log" > /dev/null 2>&1 || true
    kill "$sim"; wait "$sim" 2>/dev/null || true
    awk -v e="$e" '
        function secs(t, us) { split(t, a, ":"); return a[1]*3600 + a[2]*60 + a[3] + us/1e6 }
        /ucast_mgr_route: building routing with/ && !s { s = secs($3, $4) }
        /tables configured on all switches/ && s && !d { d = secs($3, $4); used = $9 }
        END { if (s && d) printf "%-7s OpenSM routing %.4f s (engine used: %s)\n", e, d - s, used;
              else printf "%-7s OpenSM did not finish routing (see its log)\n", e }' "osm-$e.log"
    echo "$e OpenSM peak RSS $(( $(tail -1 "rss-$e.txt" 2>/dev/null || echo 0) / 1024 )) MB"
done
