#!/usr/bin/env python3
"""Per-layer costs of one MPI_Bcast from callgrind dumps (benches/callcost.sh).

Each dump is one phase of benches/callcost/driver.c (its trigger names it:
ENTRY|TYPE|warm or cold), collected only inside the phase's calls. A call's
cost splits into layers by the call graph:
  entry     everything under the program's call (the driver's own
            instructions around it left out);
  library   the calls into libmpi that move the data, from outside libmpi:
            its PMPI_Bcast (or, with nothing interposed, its MPI_Bcast: the
            same code), or, for colltune's own algorithms, their
            point-to-point calls (PMPI_Isend, PMPI_Send, PMPI_Recv,
            PMPI_Waitall, PMPI_Wait);
  binding   the library's Fortran binding (libmpi_mpifh), its calls into
            PMPI_Bcast left out;
  interposer  entry - binding - library: the preload's own code, its PLT
            stubs and whatever it asks the library for (PMPI_Comm_size,
            PMPI_Type_size, ...) on the way.
Per call: Ir (instructions), lines (I1 + D1 misses: with the caches flushed
before every call, the distinct cache lines the call touches; I and D
apart), bm (branch misses, conditional + indirect, callgrind's simple
predictor).

Usage: report.py CONFIG=DUMP_PREFIX ...   (the dumps DUMP_PREFIX.1, .2, ...)
"""
import glob
import re
import sys
from collections import defaultdict

EVENTS_WANTED = ["Ir", "I1mr", "D1mr", "D1mw", "Bcm", "Bim"]

# libmpi's entry points that move a broadcast's data (the library's share).
DATA_CALLS = {p + f for p in ("PMPI_", "MPI_")
              for f in ("Bcast", "Isend", "Send", "Recv", "Waitall", "Wait")}


def parse(path):
    """(trigger, events, exclusive costs by (ob, fn), call list)."""
    names = {"ob": {}, "fn": {}, "fl": {}}
    trigger, events = None, []
    ob = fn = None
    cob = cfn = None
    pending_call = None
    excl = defaultdict(lambda: None)
    calls = []
    width = 0

    def name(kind, value):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), value)

    def add(acc, vals):
        vals = vals + [0] * (width - len(vals))
        return vals if acc is None else [a + b for a, b in zip(acc, vals)]

    for line in open(path):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        if line.startswith("desc: Trigger:"):
            trigger = line.split("Client Request:", 1)[-1].strip()
            continue
        if line.startswith("events:"):
            events = line.split()[1:]
            width = len(events)
            continue
        key, sep, value = line.partition("=")
        if sep and key in ("ob", "fn", "cob", "cfn", "fl", "fi", "fe", "cfi", "cfl", "calls"):
            if key == "ob":
                ob = name("ob", value)
            elif key == "fn":
                fn = name("fn", value)
                cob = None
            elif key == "cob":
                cob = name("ob", value)
            elif key == "cfn":
                cfn = name("fn", value)
            elif key == "calls":
                pending_call = (ob, fn, cob or ob, cfn)
            else:
                name("fl", value)
            continue
        if line[0] in "0123456789+-*":
            parts = line.split()
            vals = [int(v) for v in parts[1:]]
            if pending_call:
                calls.append((*pending_call, vals + [0] * (width - len(vals))))
                pending_call, cob = None, None
            else:
                excl[(ob, fn)] = add(excl[(ob, fn)], vals)
    return trigger, events, dict(excl), calls


def layers(path):
    trigger, events, excl, calls = parse(path)
    w = len(events)
    zero = [0] * w

    def vsum(vs):
        out = list(zero)
        for v in vs:
            out = [a + b for a, b in zip(out, v)]
        return out

    total = vsum(excl.values())
    driver = vsum(v for (o, _), v in excl.items() if o and o.endswith("/driver"))
    libmpi = lambda o: bool(o) and "/libmpi.so" in o
    mpifh = lambda o: bool(o) and "/libmpi_mpifh.so" in o
    entry = [a - b for a, b in zip(total, driver)]
    lib = vsum(v for (o, f, co, cf, v) in calls
               if cf in DATA_CALLS and libmpi(co) and not libmpi(o))
    binding = vsum(v for (o, f, co, cf, v) in calls if mpifh(co) and not mpifh(o))
    below = binding if any(binding) else lib
    inter = [a - b for a, b in zip(entry, below)]
    bind = [a - b for a, b in zip(binding, lib)] if any(binding) else list(zero)
    return trigger, events, {"entry": entry, "interposer": inter, "binding": bind, "library": lib}


def main(args):
    rows = []
    for arg in args:
        config, prefix = arg.split("=", 1)
        for path in sorted((p for p in glob.glob(prefix + ".*") if p.rsplit(".", 1)[1].isdigit()), key=lambda p: int(p.rsplit(".", 1)[1])):
            trigger, events, lay = layers(path)
            if not trigger or "|" not in trigger:
                continue
            entry, dtype, cache = trigger.split("|")
            calls = int(re.search(r"calls=(\d+)", trigger).group(1)) if "calls=" in trigger else None
            rows.append((config, entry, dtype, cache, events, lay))
    if not rows:
        sys.exit("callcost: no dumps with a phase's trigger found")
    return rows


def per_call(v, events, calls):
    ix = {e: i for i, e in enumerate(events)}
    g = lambda e: v[ix[e]] / calls if e in ix else 0.0
    return {"Ir": g("Ir"), "I": g("I1mr"), "D": g("D1mr") + g("D1mw"), "bm": g("Bcm") + g("Bim")}


def table(rows, warm_calls, cold_calls):
    print("per call; Ir: instructions; lines: I1 + D1 misses with the caches flushed before the call "
          "(cold: the distinct lines the call touches), I-lines + D-lines; bm: branch misses")
    hdr = (f"{'config':<18} {'entry':<8} {'datatype':<9} | {'interposer':^31} | {'Fortran binding':^20} | "
           f"{'library (PMPI_Bcast / p2p)':^31}")
    sub = (f"{'':<18} {'':<8} {'':<9} | {'Ir warm':>8} {'bm':>4} {'Ir cold':>8} {'lines I+D':>9} | "
           f"{'Ir warm':>8} {'lines I+D':>11} | {'Ir warm':>8} {'bm':>4} {'Ir cold':>8} {'lines I+D':>9}")
    print(hdr)
    print(sub)
    keyed = {}
    for config, entry, dtype, cache, events, lay in rows:
        keyed[(config, entry, dtype, cache)] = (events, lay)
    order = []
    for config, entry, dtype, cache, _, _ in rows:
        if (config, entry, dtype) not in order:
            order.append((config, entry, dtype))
    for config, entry, dtype in order:
        w = keyed.get((config, entry, dtype, "warm"))
        c = keyed.get((config, entry, dtype, "cold"))
        if not w or not c:
            continue
        pw = {k: per_call(v, w[0], warm_calls) for k, v in w[1].items()}
        pc = {k: per_call(v, c[0], cold_calls) for k, v in c[1].items()}
        lines = lambda p: f"{p['I']:.1f}+{p['D']:.1f}"
        print(f"{config:<18} {entry:<8} {dtype:<9} | {pw['interposer']['Ir']:>8.1f} {pw['interposer']['bm']:>4.1f} "
              f"{pc['interposer']['Ir']:>8.1f} {lines(pc['interposer']):>9} | "
              f"{pw['binding']['Ir']:>8.1f} {lines(pc['binding']):>11} | "
              f"{pw['library']['Ir']:>8.1f} {pw['library']['bm']:>4.1f} {pc['library']['Ir']:>8.1f} "
              f"{lines(pc['library']):>9}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    warm, cold = int(sys.argv[1]), int(sys.argv[2])
    table(main(sys.argv[3:]), warm, cold)
