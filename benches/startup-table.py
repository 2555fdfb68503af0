#!/usr/bin/env python3
"""A large decision table for benches/startup.sh: SIZES communicator sizes
(2 ranks up, one node) x PER rules each (1,000 rules by default), byte
ranges of powers of 4, cycling through colltune's own algorithms and Open
MPI coll/tuned's (so the handoff writes, merges and publishes rules for
every size). Deterministic; prints the YAML on stdout.

Usage: python3 benches/startup-table.py [sizes=100] [per=10] > table.yaml
"""
import sys

sizes = int(sys.argv[1]) if len(sys.argv) > 1 else 100
per = int(sys.argv[2]) if len(sys.argv) > 2 else 10
choices = [
    "    algorithm: ompi_tuned\n    params:\n      algorithm: 7\n      segment: 0\n    execution: library\n",
    "    algorithm: binomial\n    execution: blocking\n",
    "    algorithm: knomial\n    params:\n      radix: 4\n      segment: 0\n    execution: blocking\n",
    "    algorithm: ompi_tuned\n    params:\n      algorithm: pipeline\n      segment: 1024\n    execution: library\n",
    "    algorithm: linear\n    execution: blocking\n",
]
out = [
    f"# {sizes * per} rules, made by benches/startup-table.py {sizes} {per}\n",
    "schema: 1\nprovenance:\n  host: startup-bench\n  mpi: Open MPI\n",
    "  date: 2026-12-02T00:00:00Z\n",
    f"  command: python3 benches/startup-table.py {sizes} {per}\n",
    "  colltune: 0.1.0\n  source: measured\n  sweep:\n    mode: built\nbcast:\n",
]
k = 0
for ranks in range(2, 2 + sizes):
    out.append(f"- ranks: {ranks}\n  ppn: {ranks}\n  nodes: 1\n  rules:\n")
    lo = 0
    for i in range(per):
        out.append(f"  - min_bytes: {lo}\n")
        hi = 4 ** (i + 4) - 1
        if i + 1 < per:
            out.append(f"    max_bytes: {hi}\n")
        out.append(choices[k % len(choices)])
        k += 1
        lo = hi + 1
sys.stdout.write("".join(out))
