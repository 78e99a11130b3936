#!/usr/bin/env bash
# Bring-up time of ibsm against OpenSM under ibsim: the core issue's acceptance check.
#
# What it measures. The fabric is a degraded 3-level fat tree of 16-port switches: two
# aggregation switches removed, four switch-to-switch cables cut, and every tenth host dropped
# (10%). Each round starts a fresh ibsim for each SM and measures two times:
#   ibsm:   wall time from the launch of `ibsm run --once` to its exit. --once exits with 0 only
#           when the subnet is up, so this includes discovery, LIDs, routing, LFTs, Armed and
#           Active, and the exit.
#   OpenSM: wall time from the launch of `opensm -o --maxsmps 64` to its "SUBNET UP" log line.
#           The time is read from the microsecond timestamp OpenSM writes on that line, so the
#           script's own polling adds nothing. OpenSM's exit after that line is not counted.
# Both SMs run on the first CA of the fabric (SIM_HOST). Both launch clocks start just before
# `ibsim-run`, so each time includes the same sh exec and umad2sim start-up. The rounds alternate
# ibsm and OpenSM, so both see the same machine load. The script prints each round, the medians
# and the ratio median(ibsm) / median(OpenSM). The core issue's target is a ratio of 0.4 or less,
# issue 28's 0.3 or less.
#
# After each run the script checks that the subnet really came up. For ibsm that means exit
# status 0 and "N ports active, 0 not" in its summary line. For OpenSM it means SUBNET UP, no ERR
# lines in its log, and every port ACT in its opensm-subnet.lst. With --verify (the default), an
# independent `iblinkinfo` then counts Active/LinkUp ports in ibsim, outside the timed window.
#
# Usage: benches/bringup-ratio.sh [options]
#   -r, --rounds N          rounds (default 3; 0 with --count-mads or --timeline: only those)
#       --levels L          fat-tree levels (default 3)
#       --radix K           switch ports (default 16)
#       --remove-switches N upper-level switches removed by `ibsm sim gen` (default 2)
#       --remove-links N    switch-to-switch cables cut (default 4)
#       --seed S            generator seed to start from (default 1). `sim gen --remove-switches`
#                           picks from every switch without a CA (core or aggregation), so the
#                           script moves on to the next seed until every removed switch is an
#                           aggregation switch. The seed it uses is printed.
#       --any-switch        use --seed as given, even if it removes core switches
#       --drop-every N      drop every Nth host (default 10, i.e. 10%; 0 keeps them all)
#       --maxsmps N         OpenSM --maxsmps (default 64)
#       --no-verify         skip the iblinkinfo check after each run
#       --keep              keep the work directory (logs, fabric.net) and print its path
#       --count-mads        after the timed rounds, run each SM once more (untimed) with
#                           benches/madcount.c preloaded before umad2sim, and print how many
#                           MADs of each class, method and attribute each one sent (needs cc)
#       --timeline          after the timed rounds, run each SM once more (untimed) with
#                           benches/madcount.c's timeline on, and print benches/madtimeline.py's
#                           account of each: exec, the umad open, each stage's first and last MAD
#                           and its rate, the time with nothing in flight, how full the window
#                           was, the exit (OpenSM's: its SUBNET UP line). Needs cc
#       --rt                run everything (ibsim, both SMs, the checks) under SCHED_FIFO
#                           (`chrt -f 10`; needs root or CAP_SYS_NICE): on a machine busy with
#                           other work the times then hardly move with its load. A comparison
#                           method, not the quiet-machine figure: wake-ups are immediate under
#                           SCHED_FIFO, so both SMs come out faster than on an idle machine.
# Environment: IBSM = the ibsm binary (default: target/release/ibsm of this checkout).
# Needs ibsim-utils (ibsim, ibsim-run), opensm, infiniband-diags (iblinkinfo, for --verify) and
# python3.
set -euo pipefail

rounds=3 levels=3 radix=16 rm_switches=2 rm_links=4 seed=1 any_switch=0 drop_every=10
maxsmps=64 verify=1 keep=0 count_mads=0 timeline=0 rt=0
args=("$@")
while [ $# -gt 0 ]; do
    case $1 in
        -r|--rounds) rounds=$2; shift ;;
        --levels) levels=$2; shift ;;
        --radix) radix=$2; shift ;;
        --remove-switches) rm_switches=$2; shift ;;
        --remove-links) rm_links=$2; shift ;;
        --seed) seed=$2; shift ;;
        --any-switch) any_switch=1 ;;
        --drop-every) drop_every=$2; shift ;;
        --maxsmps) maxsmps=$2; shift ;;
        --no-verify) verify=0 ;;
        --keep) keep=1 ;;
        --count-mads) count_mads=1 ;;
        --timeline) timeline=1 ;;
        --rt) rt=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$rt" = 1 ] && ! chrt -p $$ | grep -q SCHED_FIFO; then
    command -v chrt > /dev/null || { echo "--rt needs chrt (util-linux)" >&2; exit 2; }
    exec chrt -f 10 "$0" "${args[@]}"
fi
root=$(cd "$(dirname "$0")/.." && pwd)
ibsm=${IBSM:-$root/target/release/ibsm}
[ -x "$ibsm" ] || { echo "no ibsm binary at $ibsm (set IBSM= or cargo build --release)" >&2; exit 2; }
ibsm=$(readlink -f "$ibsm")
for tool in ibsim ibsim-run opensm python3; do
    command -v "$tool" > /dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ "$count_mads$timeline" = 00 ] || command -v cc > /dev/null || { echo "--count-mads and --timeline need cc" >&2; exit 2; }
[ "$verify" = 0 ] || command -v iblinkinfo > /dev/null || { echo "missing iblinkinfo (or --no-verify)" >&2; exit 2; }
# ibsim-run appends its library wrongly when LD_PRELOAD is already set.
unset LD_PRELOAD

work=$(mktemp -d "${TMPDIR:-/tmp}/bringup-ratio.XXXXXX")
sim_pid='' sm_pid=''
stop() { # pid: stop one process this script started, and reap it
    [ -n "$1" ] || return 0
    kill "$1" 2> /dev/null || true
    wait "$1" 2> /dev/null || true
}
cleanup() {
    stop "$sm_pid"; stop "$sim_pid"
    if [ "$keep" = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$work"

# ---- fabric ---------------------------------------------------------------------------------
gen() { # seed, output, switches to remove, links to cut
    "$ibsm" sim gen fat-tree --levels "$levels" --radix "$radix" --remove-switches "$3" \
        --remove-links "$4" --seed "$1" -o "$2" > gen.log 2>&1 || { cat gen.log >&2; exit 1; }
}
switch_names() { awk '/^Switch/ {print $3}' "$1" | tr -d '"' | sort; }
gen "$seed" intact.net 0 0
switch_names intact.net > intact.switches
tries=0
while :; do
    gen "$seed" degraded.net "$rm_switches" "$rm_links"
    removed=$(switch_names degraded.net | comm -23 intact.switches - | paste -sd' ' -)
    # ibsm's generator names fat-tree switches edge-N, agg-N and core-N.
    if [ "$any_switch" = 1 ] || [ -z "$removed" ] || ! printf '%s\n' $removed | grep -qv '^agg-'; then
        break
    fi
    seed=$((seed + 1)) tries=$((tries + 1))
    [ "$tries" -lt 100 ] || { echo "no seed in 100 removes only aggregation switches" >&2; exit 1; }
done

# Drop every Nth host: its paragraph (vendid/devid/guid lines and the Ca/Hca block) and every
# switch port line cabled to it, so that port is simply unconnected.
python3 - degraded.net fabric.net "$drop_every" > dropped.txt <<'EOF'
import re, sys
src, dst, every = sys.argv[1], sys.argv[2], int(sys.argv[3])
paras = open(src).read().split("\n\n")
head = re.compile(r'^(?:Hca|Ca)\s+\d+\s+"([^"]+)"', re.M)
port = re.compile(r'^\[\d+\][^"]*"([^"]+)"\[')
gone, k = set(), 0
for i, p in enumerate(paras):
    m = head.search(p)
    if m:
        k += 1
        if every > 0 and k % every == 0:
            gone.add(m.group(1))
            paras[i] = None
out = []
for p in paras:
    if p is None:
        continue
    out.append("\n".join(l for l in p.split("\n")
                         if not ((m := port.match(l)) and m.group(1) in gone)))
open(dst, "w").write("\n\n".join(out))
print(f"{len(gone)} of {k} hosts")
EOF
info=$("$ibsm" sim info fabric.net)
# ibsim's tables: nodes, switches, ports (a switch also has port 0).
read -r nodes switches ports < <(awk '
    /^Switch/ {n++; s++; p += $2 + 1} /^(Hca|Ca)/ {n++; p += $2}
    END {print n, s, p}' fabric.net)
links=$(sed -n 's/.* \([0-9]*\) links.*/\1/p' <<< "$info")
host=$(awk '/^(Hca|Ca)/ {print $3; exit}' fabric.net | tr -d '"')
verify_host=$(awk '/^(Hca|Ca)/ {n++; if (n == 2) {print $3; exit}}' fabric.net | tr -d '"')

echo "fabric: ibsm sim gen fat-tree --levels $levels --radix $radix --remove-switches $rm_switches" \
     "--remove-links $rm_links --seed $seed, then every ${drop_every}th host dropped"
echo "  removed switches: ${removed:-none}; dropped hosts: $(cat dropped.txt)"
echo "  $info"
echo "  SM on $host; ibsm $ibsm; $(opensm --version 2> /dev/null | grep -m1 OpenSM || echo OpenSM)" \
     "--maxsmps $maxsmps; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)$([ "$rt" = 1 ] && echo '; SCHED_FIFO (--rt)')"

# ---- ibsim ----------------------------------------------------------------------------------
start_ibsim() { # run name
    export IBSIM_SOCKNAME="bringup-ratio-$$-$1"
    ibsim -s -n -N "$nodes" -S "$switches" -P "$ports" fabric.net > "$1.ibsim" 2>&1 &
    sim_pid=$!
    # ibsim prints "Network simulator ready." just before it binds its sockets, and @name:out9
    # is the last one it binds (/proc/net/unix shows it as "@name:out9@", the name's NUL as @).
    # Wait for that socket rather than for a fixed time.
    local deadline=$((SECONDS + 60))
    until grep -qE "@$IBSIM_SOCKNAME:out9@?\$" /proc/net/unix; do
        kill -0 "$sim_pid" 2> /dev/null || { echo "ibsim died:" >&2; grep -v 'cannot parse remote lid' "$1.ibsim" | tail >&2; exit 1; }
        [ "$SECONDS" -lt "$deadline" ] || { echo "ibsim not ready after 60 s" >&2; exit 1; }
        sleep 0.01
    done
}
stop_ibsim() { # run name: check ibsim's log and stop it
    stop "$sim_pid"; sim_pid=''
    # Each link line without "lid ... 4xQDR" draws one harmless parse warning; count the rest.
    local w
    w=$(grep -v 'cannot parse remote lid' "$1.ibsim" | grep -ci 'ibwarn\|ibpanic\|error' || true)
    [ "$w" = 0 ] || echo "    ibsim: $w warnings, e.g. $(grep -v 'cannot parse remote lid' "$1.ibsim" | grep -i -m1 'ibwarn\|ibpanic\|error')"
}
# Independent check, outside the timed window: ports that are Active/LinkUp in ibsim, against
# the two ends of every link, and linked ports in any other state.
check_links() { # run name
    [ "$verify" = 1 ] || return 0
    SIM_HOST=$verify_host timeout 120 ibsim-run iblinkinfo > "$1.links" 2> "$1.links.err" || true
    local active other
    active=$(grep -c 'Active/  LinkUp' "$1.links" || true)
    other=$(grep 'LinkUp' "$1.links" | grep -vc 'Active/  LinkUp' || true)
    printf '    iblinkinfo: %s of %s linked ports Active/LinkUp, %s linked ports in another state\n' \
        "$active" "$((2 * links))" "$other"
    [ "$active" = $((2 * links)) ] && [ "$other" = 0 ] || problems+=("$1: iblinkinfo $active of $((2 * links)) active, $other other")
}

# ---- runs -----------------------------------------------------------------------------------
run_ibsm() { # round
    local name=ibsm-$1 rc=0 t0 t1
    start_ibsim "$name"
    mkdir "$name" && cd "$name"    # umad2sim writes ./sys-<pid>
    t0=$EPOCHREALTIME
    SIM_HOST=$host timeout 300 ibsim-run "$ibsm" run --once > ../"$name.out" 2> ../"$name.err" &
    sm_pid=$!
    wait "$sm_pid" || rc=$?
    t1=$EPOCHREALTIME
    sm_pid=''
    cd ..
    ibsm_times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')")
    local summary
    summary=$(grep -m1 'subnet' "$name.out" || true)
    printf 'round %s  ibsm   %s s  exit %s  %s\n' "$1" "${ibsm_times[-1]}" "$rc" "${summary:-(no summary line)}"
    [ "$rc" = 0 ] || { problems+=("$name: exit status $rc"); tail -5 "$name.err" | sed 's/^/    /'; }
    grep -q ', 0 not' <<< "$summary" || problems+=("$name: not every port active: $(grep -o '[0-9]* ports active, [0-9]* not' <<< "$summary")")
    check_links "$name"
    stop_ibsim "$name"
}
run_opensm() { # round
    local name=opensm-$1 rc=0 t0
    start_ibsim "$name"
    mkdir -p "$name/cache" && cd "$name"
    # Private cache (guid2lid from earlier runs would change OpenSM's LID assignment) and dump
    # directory (opensm-subnet.lst), so no state is shared with other runs or other users.
    t0=$EPOCHREALTIME
    OSM_CACHE_DIR=$PWD/cache OSM_TMP_DIR=$PWD SIM_HOST=$host timeout 300 \
        ibsim-run opensm -o --maxsmps "$maxsmps" -f "$PWD/opensm.log" > opensm.out 2>&1 &
    sm_pid=$!
    wait "$sm_pid" || rc=$?
    sm_pid=''
    cd ..
    local line
    line=$(grep -m1 -- '-> SUBNET UP' "$name/opensm.log" || true)
    if [ -z "$line" ]; then
        echo "round $1  OpenSM: no SUBNET UP (exit $rc):"; tail -5 "$name/opensm.log" | sed 's/^/    /'
        problems+=("$name: no SUBNET UP"); stop_ibsim "$name"; return
    fi
    # "Nov 25 06:18:23 465189 [BCE3F6C0] 0x02 -> SUBNET UP": local time without the year; take
    # the launch's year (and the next one if that puts the line more than a day before launch).
    local year up
    year=$(date -d "@${t0%.*}" +%Y)
    up=$(date -d "$(awk '{print $1, $2}' <<< "$line") $year $(awk '{print $3}' <<< "$line")" +%s)
    [ "$up" -ge $(( ${t0%.*} - 86400 )) ] ||
        up=$(date -d "$(awk '{print $1, $2}' <<< "$line") $((year + 1)) $(awk '{print $3}' <<< "$line")" +%s)
    opensm_times+=("$(awk -v a="$t0" -v s="$up" -v us="$(awk '{print $4}' <<< "$line")" \
        'BEGIN {printf "%.3f", s + us / 1e6 - a}')")
    local errs act notact
    errs=$(grep -c ' ERR ' "$name/opensm.log" || true)
    act=$(grep -c 'LOG=ACT' "$name/opensm-subnet.lst" 2> /dev/null || true)
    notact=$(grep -o 'LOG=[A-Z]*' "$name/opensm-subnet.lst" 2> /dev/null | grep -vc 'LOG=ACT' || true)
    printf 'round %s  OpenSM %s s  exit %s  SUBNET UP; %s ERR lines; opensm-subnet.lst: %s of %s link ends ACT, %s not\n' \
        "$1" "${opensm_times[-1]}" "$rc" "$errs" "$act" "$((2 * links))" "$notact"
    [ "$rc" = 0 ] || problems+=("$name: exit status $rc")
    [ "$errs" = 0 ] || { problems+=("$name: $errs ERR lines"); grep -m3 ' ERR ' "$name/opensm.log" | sed 's/^/    /'; }
    [ "$act" = $((2 * links)) ] && [ "$notact" = 0 ] || problems+=("$name: opensm-subnet.lst $act ACT of $((2 * links)), $notact not")
    check_links "$name"
    stop_ibsim "$name"
}

ibsm_times=() opensm_times=() problems=()
for r in $(seq 1 "$rounds"); do
    run_ibsm "$r"
    run_opensm "$r"
done

# ---- MAD counts (--count-mads) ---------------------------------------------------------------
if [ "$count_mads" = 1 ]; then
    cc -O2 -shared -fPIC -o madcount.so "$root/benches/madcount.c" -ldl
    # ibsim-run's own library, preloaded after the counter (ibsim-run cannot add to LD_PRELOAD).
    umad2sim=$(sed -n 's/^sim_so=//p' "$(command -v ibsim-run)")
    [ -f "$umad2sim" ] || { echo "umad2sim library not found (from ibsim-run)" >&2; exit 1; }
    start_ibsim count-ibsm
    mkdir count-ibsm && cd count-ibsm
    MADCOUNT_OUT=$PWD/mads SIM_HOST=$host LD_PRELOAD="$work/madcount.so $umad2sim" timeout 300 \
        "$ibsm" run --once > ../count-ibsm.out 2>&1 || problems+=("count-ibsm: exit status $?")
    cd ..
    stop_ibsim count-ibsm
    start_ibsim count-opensm
    mkdir -p count-opensm/cache && cd count-opensm
    MADCOUNT_OUT=$PWD/mads OSM_CACHE_DIR=$PWD/cache OSM_TMP_DIR=$PWD SIM_HOST=$host \
        LD_PRELOAD="$work/madcount.so $umad2sim" timeout 300 \
        opensm -o --maxsmps "$maxsmps" -f "$PWD/opensm.log" > opensm.out 2>&1 || problems+=("count-opensm: exit status $?")
    cd ..
    stop_ibsim count-opensm
    echo
    echo "MADs sent, by class, method and attribute (one untimed run of each; OpenSM's until its exit):"
    python3 - count-ibsm count-opensm <<'PY'
import glob, sys
attrs = {0x10: "NodeDescription", 0x11: "NodeInfo", 0x12: "SwitchInfo", 0x14: "GUIDInfo",
         0x15: "PortInfo", 0x16: "P_KeyTable", 0x17: "SL2VLTable", 0x18: "VLArbitration",
         0x19: "LinearForwardingTable", 0x1b: "MulticastForwardingTable", 0x20: "SMInfo"}
methods = {0x01: "Get", 0x02: "Set", 0x81: "GetResp", 0x05: "Trap", 0x07: "TrapRepress",
           0x06: "Report", 0x86: "ReportResp", 0x12: "GetTable", 0x92: "GetTableResp"}
classes = {0x01: "SMP LID", 0x81: "SMP DR", 0x03: "SA", 0x04: "PerfMgt"}
def load(d):
    out = {}
    for f in glob.glob(d + "/mads.*"):
        for line in open(f):
            kv = dict(x.split("=") for x in line.split())
            k = (int(kv["class"], 16), int(kv["method"], 16), int(kv["attr"], 16))
            out[k] = out.get(k, 0) + int(kv["count"])
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
rows = sorted(set(a) | set(b), key=lambda k: -(a.get(k, 0) + b.get(k, 0)))
print(f"  {'class':8} {'method':8} {'attribute':26} {'ibsm':>8} {'OpenSM':>8}")
for c, m, at in rows:
    name = {0x01: "ClassPortInfo", 0x12: "PortCounters"}.get(at) if c == 0x04 else attrs.get(at)
    name = name or f"0x{at:04x}"
    print(f"  {classes.get(c, hex(c)):8} {methods.get(m, hex(m)):8} {name:26} {a.get((c, m, at), 0):8} {b.get((c, m, at), 0):8}")
print(f"  {'total':44} {sum(a.values()):8} {sum(b.values()):8}")
PY
fi

# ---- timelines (--timeline) -----------------------------------------------------------------
# OpenSM's "SUBNET UP" line as seconds since the epoch (its log has local time, no year).
subnet_up_at() { # opensm.log, launch time
    local line year up
    line=$(grep -m1 -- '-> SUBNET UP' "$1" || true)
    [ -n "$line" ] || return 0
    year=$(date -d "@${2%.*}" +%Y)
    up=$(date -d "$(awk '{print $1, $2}' <<< "$line") $year $(awk '{print $3}' <<< "$line")" +%s)
    awk -v s="$up" -v us="$(awk '{print $4}' <<< "$line")" 'BEGIN {printf "%.6f", s + us / 1e6}'
}
if [ "$timeline" = 1 ]; then
    [ -f madcount.so ] || cc -O2 -shared -fPIC -o madcount.so "$root/benches/madcount.c" -ldl
    umad2sim=$(sed -n 's/^sim_so=//p' "$(command -v ibsim-run)")
    [ -f "$umad2sim" ] || { echo "umad2sim library not found (from ibsim-run)" >&2; exit 1; }
    start_ibsim tl-ibsm
    mkdir tl-ibsm && cd tl-ibsm
    t0=$EPOCHREALTIME
    MADCOUNT_TIMELINE=$PWD/tl SIM_HOST=$host LD_PRELOAD="$work/madcount.so $umad2sim" timeout 300 \
        "$ibsm" run --once > ../tl-ibsm.out 2>&1 || problems+=("tl-ibsm: exit status $?")
    t1=$EPOCHREALTIME
    cd ..
    stop_ibsim tl-ibsm
    echo
    echo "ibsm's timeline (one untimed run; the exit seen by the launcher includes writing the timeline):"
    python3 "$root/benches/madtimeline.py" tl-ibsm/tl.* --launch "$t0" --exit "$t1" | sed 's/^/  /'
    start_ibsim tl-opensm
    mkdir -p tl-opensm/cache && cd tl-opensm
    t0=$EPOCHREALTIME
    MADCOUNT_TIMELINE=$PWD/tl OSM_CACHE_DIR=$PWD/cache OSM_TMP_DIR=$PWD SIM_HOST=$host \
        LD_PRELOAD="$work/madcount.so $umad2sim" timeout 300 \
        opensm -o --maxsmps "$maxsmps" -f "$PWD/opensm.log" > opensm.out 2>&1 || problems+=("tl-opensm: exit status $?")
    cd ..
    stop_ibsim tl-opensm
    up=$(subnet_up_at tl-opensm/opensm.log "$t0")
    echo
    echo "OpenSM's timeline (one untimed run; 'exit' is its SUBNET UP line; it goes on to its exit):"
    python3 "$root/benches/madtimeline.py" tl-opensm/tl.* --launch "$t0" ${up:+--exit "$up"} --window "$maxsmps" |
        sed 's/^/  /; s/exit seen by the launcher (the timeline written before it)/SUBNET UP logged/'
fi

# ---- summary --------------------------------------------------------------------------------
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {printf "%.3f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo
[ "$rounds" = 0 ] || echo "ibsm   start->exit       (s): ${ibsm_times[*]}"
[ "$rounds" = 0 ] || echo "OpenSM start->SUBNET UP (s): ${opensm_times[*]:-none}"
if [ "${#opensm_times[@]}" -gt 0 ]; then
    mi=$(median "${ibsm_times[@]}") mo=$(median "${opensm_times[@]}")
    ratio=$(awk -v a="$mi" -v b="$mo" 'BEGIN {printf "%.2f", a / b}')
    verdict=$(awk -v r="$ratio" 'BEGIN {print (r <= 0.4) ? "meets" : "misses"}')
    verdict28=$(awk -v r="$ratio" 'BEGIN {print (r <= 0.3) ? "meets" : "misses"}')
    echo "medians of ${rounds}: ibsm $mi s, OpenSM $mo s; ratio ibsm/OpenSM $ratio ($verdict the core" \
         "issue's <= 0.4, $verdict28 issue 28's <= 0.3)"
fi
[ "$rounds" = 0 ] || echo "ibsm summary (last round): $(grep -m1 'subnet' "ibsm-$rounds.out" || echo none)"
if [ "${#problems[@]}" -gt 0 ]; then
    echo "PROBLEMS:"; printf '  %s\n' "${problems[@]}"; exit 1
fi
