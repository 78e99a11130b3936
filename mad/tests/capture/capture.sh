#!/usr/bin/env bash
# Capture raw MAD exchanges between OpenSM, infiniband-diags and ibsim.
#
# NOT run by CI.  Needs: ibsim-utils 0.10, opensm 3.3.23, infiniband-diags 44.0,
# libibmad-dev, gcc, python3.  Usage:
#
#   mad/tests/capture/capture.sh [WORKDIR]        # default /tmp/ibsm-capture
#   python3 mad/tests/capture/mkfix.py WORKDIR/raw mad/tests/fixtures
#
# What it does (see ../fixtures/README.md for the resulting files):
#   * ibsim on net.2sw2path4hca with a private IBSIM_SOCKNAME, console on a
#     FIFO kept open by a holder process, console "Verbose 3" so ibsim hex-dumps
#     every packet a client writes (requests from tools, responses from OpenSM);
#   * OpenSM on Hca1 (LIDs end up Hca1=1 Switch1=2 Switch2=3 Hca2=4 Hca3=5
#     Hca4=6), which programs the fabric and serves the SA;
#   * every tool runs on Hca3 with "-d -d", so libibmad prints the exact
#     request ("send buf": 64-byte umad header + MAD) and response ("rcv buf")
#     on stderr, and the tool's normal output on stdout;
#   * for each capture NAME: raw/NAME.cmd (command line), raw/NAME.out (stdout),
#     raw/NAME.err (stderr), raw/NAME.sim (ibsim log written meanwhile).
# Every process started here is killed on exit, by pid.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${1:-/tmp/ibsm-capture}
NET=/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca
mkdir -p "$WORK/raw" "$WORK/cache" "$WORK/dump" "$WORK/bin"
cd "$WORK" || exit 1
RAW=$WORK/raw
export IBSIM_SOCKNAME=ibsmcap$$
export OSM_CACHE_DIR=$WORK/cache OSM_TMP_DIR=$WORK/cache

gcc -Wall -O1 -o bin/sa_set "$HERE/sa_set.c" -libmad || exit 1
gcc -Wall -O1 -o bin/issm_toggle "$HERE/issm_toggle.c" || exit 1

# OpenSM config: everything default except writable paths, no periodic sweep
# (keeps the ibsim log quiet), and an IPoIB partition so a multicast group exists.
opensm -c "$WORK/opensm.conf.tmpl" >/dev/null 2>&1
echo 'Default=0x7fff, ipoib : ALL=full ;' > partitions.conf
sed -e "s#^log_file .*#log_file $WORK/opensm.log#" \
    -e "s#^dump_files_dir .*#dump_files_dir $WORK/dump/#" \
    -e "s#^partition_config_file .*#partition_config_file $WORK/partitions.conf#" \
    -e 's#^sweep_interval .*#sweep_interval 0#' opensm.conf.tmpl > opensm.conf

PIDS=()
cleanup() {
    # OpenSM first (it needs ibsim alive to exit), then ibsim, then the FIFO holder.
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$WORK"/sys-*
}
trap cleanup EXIT

cp "$NET" net
rm -f ibsim.ctl; mkfifo ibsim.ctl
ibsim -s net < ibsim.ctl > ibsim.out 2>&1 &
IBSIM=$!
sleep infinity > ibsim.ctl &
HOLDER=$!
PIDS=("$HOLDER" "$IBSIM")
sleep 1
echo 'Verbose 3' > ibsim.ctl
sleep 0.5

size() { stat -c %s ibsim.out; }

# cap NAME HOST CMD...: run CMD attached to HOST, keep its stdout/stderr and the ibsim log slice.
cap() {
    local name=$1 host=$2; shift 2
    local off; off=$(size)
    echo "SIM_HOST=$host ibsim-run $*" > "$RAW/$name.cmd"
    SIM_HOST=$host ibsim-run "$@" > "$RAW/$name.out" 2> "$RAW/$name.err"
    sleep 0.5
    tail -c +$((off + 1)) ibsim.out > "$RAW/$name.sim"
}

# console NAME WAIT CMD: send a console command, wait, keep the ibsim log slice.
console() {
    local name=$1 wait=$2 cmd=$3
    local off; off=$(size)
    echo "ibsim console: $cmd" > "$RAW/$name.cmd"
    echo "$cmd" > ibsim.ctl
    sleep "$wait"
    : > "$RAW/$name.out"; : > "$RAW/$name.err"
    tail -c +$((off + 1)) ibsim.out > "$RAW/$name.sim"
}

# --- OpenSM brings the subnet up -------------------------------------------
off=$(size)
echo "SIM_HOST=Hca1 ibsim-run opensm -F opensm.conf" > "$RAW/opensm_start.cmd"
SIM_HOST=Hca1 ibsim-run opensm -F "$WORK/opensm.conf" > opensm.stdout 2>&1 &
PIDS=("$!" "${PIDS[@]}")
for _ in $(seq 30); do
    sleep 1
    SIM_HOST=Hca3 ibsim-run saquery NR 6 2>/dev/null | grep -q Hca4 && break
done
sleep 1
tail -c +$((off + 1)) ibsim.out > "$RAW/opensm_start.sim"
: > "$RAW/opensm_start.out"; cp opensm.stdout "$RAW/opensm_start.err"

# --- SMPs answered by ibsim's SMA (tool on Hca3 = LID 5) --------------------
cap smp_ni_sw_lid   Hca3 smpquery -d -d nodeinfo 2
cap smp_ni_ca_dr3   Hca3 smpquery -d -d -D nodeinfo 0,1,3,2
cap smp_nd_sw_dr    Hca3 smpquery -d -d -D nodedesc 0,1
cap smp_nd_ca_lid   Hca3 smpquery -d -d nodedesc 6
cap smp_pi_sw0_lid  Hca3 smpquery -d -d -K portinfo 2 0
cap smp_pi_sw3_dr   Hca3 smpquery -d -d -K -D portinfo 0,1 3
cap smp_pi_sw4_down Hca3 smpquery -d -d -K portinfo 2 4
cap smp_pi_ca_lid   Hca3 smpquery -d -d -K portinfo 6 1
cap smp_si_lid      Hca3 smpquery -d -d switchinfo 3
cap smp_si_dr       Hca3 smpquery -d -d -D switchinfo 0,1
cap smp_pkey_ca     Hca3 smpquery -d -d pkeys 6 1
cap smp_pkey_sw     Hca3 smpquery -d -d pkeys 2 1
cap smp_sl2vl_ca    Hca3 smpquery -d -d sl2vl 6 1
cap smp_sl2vl_sw    Hca3 smpquery -d -d sl2vl 2 3
cap smp_vlarb_ca    Hca3 smpquery -d -d vlarb 6 1
cap smp_guid_ca     Hca3 smpquery -d -d guidinfo 6
cap smp_lft         Hca3 ibroute -d -d 2
# --- SMInfo: answered by OpenSM itself --------------------------------------
cap smp_sminfo_lid  Hca3 sminfo -d -d
cap smp_sminfo_dr   Hca3 sminfo -d -d -D 0,1,1

# --- SA, answered by OpenSM -------------------------------------------------
cap sa_cpi    Hca3 saquery -d -d -c
cap sa_nr     Hca3 saquery -d -d NR 4
cap sa_pir    Hca3 saquery -d -d PIR 6/1
cap sa_sl2vl  Hca3 saquery -d -d SL2VL 6
cap sa_pktr   Hca3 saquery -d -d PKTR 6
cap sa_vlar   Hca3 saquery -d -d VLAR 6
cap sa_lr     Hca3 saquery -d -d LR 2/3
cap sa_lftr   Hca3 saquery -d -d LFTR 2/0
cap sa_gir    Hca3 saquery -d -d GIR 6
cap sa_swir   Hca3 saquery -d -d SWIR 2
cap sa_smir   Hca3 saquery -d -d SMIR
cap sa_pr     Hca3 saquery -d -d --src-to-dst 5:6
cap sa_iir    Hca3 saquery -d -d IIR
# records written by our libibmad program, echoed back by OpenSM
cap sa_sr_set  Hca3 bin/sa_set sr
cap sa_sr      Hca3 saquery -d -d SR
cap sa_mcm_set Hca3 bin/sa_set mcm
cap sa_mcmr    Hca3 saquery -d -d MCMR
cap sa_mftr    Hca3 saquery -d -d MFTR
cap smp_mft    Hca3 ibroute -d -d -M 2
# libibmad encoding only (no network)
"$WORK/bin/sa_set" pr > "$RAW/lib_pr.out" 2>&1
echo "bin/sa_set pr" > "$RAW/lib_pr.cmd"; : > "$RAW/lib_pr.err"; : > "$RAW/lib_pr.sim"

# --- Traps ------------------------------------------------------------------
console trap128_unlink 4 'Unlink "Hca4"'
console trap128_relink 6 'ReLink "Hca4"'
cap trap144_issm Hca2 bin/issm_toggle 2
sleep 2
tail -c +1 ibsim.out > "$RAW/full.sim.log"
echo "capture done: $RAW"
