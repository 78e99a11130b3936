#!/usr/bin/env python3
"""Reads a MAD timeline written by benches/madcount.c ($MADCOUNT_TIMELINE) and says where an
SM's bring-up time went: process start, the umad open, each stage's first and last MAD, the
time no MAD was in flight (the SM computing or waiting on itself), how full the window was, and
the time to the exit.

Usage: benches/madtimeline.py TIMELINE... [--launch EPOCH_S] [--exit EPOCH_S] [--window N]
  --launch  when the process was launched (the script's $EPOCHREALTIME before exec): the
            first row then covers exec, the dynamic loader and umad2sim's set-up
  --exit    when the launcher saw the process exit (that includes writing the timeline)
  --window  the SM's SMP window (default 64), for the "window full" row
Given several files (a launcher such as timeout(1) writes one too), the one with the most MADs
sent is read.

Stages are told apart by what is sent (requests only; answers are matched by TID):
  discovery  Gets of any attribute, and SwitchInfo Sets before the first LFT block
  configure  PortInfo Sets that do not ask for Active (settings, LID, Armed), P_Key Sets
  lfts       LinearForwardingTable Sets, and SwitchInfo Sets from the first LFT block on
  activate   PortInfo Sets that ask for Active (PortState 4)
  other      anything else (PerfMgt, SA, ...)
"""
import argparse
import sys


def parse(path):
    events = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue
            ev = {"ns": int(parts[0]), "kind": parts[1]}
            for kv in parts[2:]:
                k, _, v = kv.partition("=")
                ev[k] = int(v, 0)
            events.append(ev)
    events.sort(key=lambda e: e["ns"])
    return events


def stage(ev, lft_seen):
    method, attr = ev["method"], ev["attr"]
    # TID 0: ibsm's own wake-up SMP at its exit, not part of the sweep.
    if ev["class"] not in (0x01, 0x81) or ev["tid"] == 0:
        return "other"
    if method == 0x01:
        return "discovery"
    if method != 0x02:
        return "other"
    if attr == 0x19:
        return "lfts"
    if attr == 0x12:
        return "lfts" if lft_seen else "discovery"
    if attr == 0x15:
        return "activate" if ev["state"] == 4 else "configure"
    if attr == 0x16:
        return "configure"
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("timeline", nargs="+")
    ap.add_argument("--launch", type=float)
    ap.add_argument("--exit", type=float)
    ap.add_argument("--window", type=int, default=64)
    a = ap.parse_args()
    events = max((parse(p) for p in a.timeline), key=lambda ev: sum(e["kind"] == "send" for e in ev))
    start = next((e["ns"] for e in events if e["kind"] == "start"), None)
    opened = next((e["ns"] for e in events if e["kind"] == "open"), None)
    exited = next((e["ns"] for e in events if e["kind"] == "exit"), None)
    sends = [e for e in events if e["kind"] == "send" and e["method"] in (0x01, 0x02)]
    if not sends:
        sys.exit("no requests in the timeline")
    t0 = int(a.launch * 1e9) if a.launch else (start or sends[0]["ns"])

    def ms(ns):
        return f"{(ns - t0) / 1e6:8.2f}"

    # Stages: first and last request, last answer; in-flight by TID.
    stages, by_tid, lft_seen = {}, {}, False
    for e in sends:
        s = stage(e, lft_seen)
        lft_seen |= e["attr"] == 0x19 and e["method"] == 0x02
        st = stages.setdefault(s, {"n": 0, "first": e["ns"], "last": e["ns"], "answered": None})
        st["n"] += 1
        st["last"] = e["ns"]
        by_tid[(e["class"], e["tid"])] = s
    answers = [e for e in events
               if e["kind"] == "recv" and e["method"] & 0x80 and (e["class"], e["tid"]) in by_tid]
    for e in answers:
        st = stages[by_tid[(e["class"], e["tid"])]]
        st["answered"] = e["ns"]
    last_answer = max((e["ns"] for e in answers), default=sends[-1]["ns"])

    print(f"times in ms from {'the launch' if a.launch else 'the process start'}")
    if a.launch and start:
        print(f"  {ms(start)}  process start (this library loaded: exec and the dynamic loader done)")
    if opened:
        print(f"  {ms(opened)}  umad device opened (umad2sim's set-up: its sysfs tree, ibsim's socket)")
    print(f"  {ms(sends[0]['ns'])}  first request sent")
    order = sorted(stages.items(), key=lambda kv: kv[1]["first"])
    for name, st in order:
        ans = ms(st["answered"]) if st["answered"] else "       -"
        span = (st["answered"] or st["last"]) - st["first"]
        print(f"  {ms(st['first'])} .. {ms(st['last'])} sent, last answer {ans}: {name:9} "
              f"{st['n']:6} requests, {span / 1e6:6.2f} ms, {span / 1e3 / max(st['n'], 1):5.2f} us each")
    print(f"  {ms(last_answer)}  last answer to a request")
    if exited:
        print(f"  {ms(exited)}  _exit() called (or the library unloaded)")
    if a.exit:
        print(f"  {ms(int(a.exit * 1e9))}  exit seen by the launcher (the timeline written before it)")

    # In flight over time, from the first request to the last answer.
    flow = sorted([(e["ns"], 1) for e in sends] + [(e["ns"], -1) for e in answers])
    hist = {"0 (nothing in flight)": 0, "1-15": 0, "16-47": 0, f"48-{a.window - 1}": 0, f">= {a.window}": 0}
    keys = list(hist)
    gaps, level, prev = [], 0, flow[0][0]
    for ns, d in flow:
        dt = ns - prev
        k = 0 if level <= 0 else 1 if level < 16 else 2 if level < 48 else 3 if level < a.window else 4
        hist[keys[k]] += dt
        if level <= 0 and dt > 0:
            gaps.append((dt, prev))
        level += d
        prev = ns
    total = flow[-1][0] - flow[0][0]
    print(f"requests in flight, share of the {total / 1e6:.2f} ms from the first request to the last answer:")
    for k, v in hist.items():
        print(f"  {k:22} {v / 1e6:8.2f} ms  {100 * v / max(total, 1):5.1f} %")
    gaps.sort(reverse=True)
    print("longest stretches with nothing in flight (what the SM did then is its own time):")
    for dt, at in gaps[:8]:
        before = max((e for e in sends if e["ns"] <= at), key=lambda e: e["ns"], default=None)
        after = min((e for e in sends if e["ns"] > at), key=lambda e: e["ns"], default=None)
        b = stages and before and stage(before, True)
        n = after and stage(after, True)
        print(f"  {dt / 1e6:7.2f} ms at {ms(at)}: after {b or '-'}, before {n or 'the end'}")
    print(f"  all such stretches: {sum(g for g, _ in gaps) / 1e6:.2f} ms in {len(gaps)}")


if __name__ == "__main__":
    main()
