#!/usr/bin/env bash
# The call path's cost (issue 16, item 2), two measurements:
#  1. per layer (benches/callpath.rs): attribute lookup, datatype checks,
#     decision, plan lookup, executor, and the whole MPI_Bcast through
#     colltune against PMPI_Bcast, with no table (every call the library's)
#     and with linear / binomial / k-nomial forced;
#  2. back to back (benches/callpath/b2b.c, IMB-like: t_avg, 1 B .. 4 MiB),
#     interleaved runs of: Open MPI's default, the preload with no table
#     (a rule that says "the library"), a table naming Open MPI's linear
#     (handed to Open MPI's rules file at MPI_Init: the handoff's shortcut)
#     against Open MPI's forced linear, and each of our linear, binomial and
#     k-nomial (radix 4) against Open MPI's forced linear (1), binomial (6)
#     and k-nomial (7, radix 4); prints per-size medians over runs and the
#     ratios ours / Open MPI's (target <= 1.1) and preload / plain.
#
# Measured 2026-12-01, 4 ranks on the shared 2-core VM (load 8-15 from other
# builds: whole-call times are noise-dominated, local layers are not),
# 1 B, MPI_BYTE, a duplicate of MPI_COMM_WORLD, median (min..max) of 11
# trials, ns per call, rank 0 alone running (the others asleep):
#   layer                      before (8ee07d9)        after
#   attribute lookup           38 (24..41)             2.7 (2.0..4.2) per-thread cache
#                                                      (MPI_Comm_get_attr itself: 33)
#   lock (GLOBAL + comm)       6.3 + GLOBAL's          none on Library / Direct routes
#   datatype probe+size+env.   77 (46..782)            2.5 (1.3..3.6) predefined-type cache
#   decision                   1.4..1.7                1.4..4.8 (decision and route)
#   plan lookup (linear)       862 (47..1281)          no plan on the direct path
#                                                      (general path: lock + cache 22..94)
#   MPI_Bcast, library route,  not measured            20.7 (15..31) over PMPI_Bcast
#     1-rank communicator
#   MPI_Bcast linear, 4 ranks  19.0 us vs library 6.0  5.6 us vs library 4.6
#   (back to back; noisy)
# Then (9eef385 and after), with a 32-rule table whose rule at 1 B names
# Open MPI's forced basic_linear (COLLTUNE_TABLE=results/vm/table-imb.yaml,
# `benches/callpath.sh` runs the layers with the table given as its 5th
# argument), quiet machine:
#   decision and route         14.7 (14.5..15.5)      8.4 (7.6..12.8) rule bounds in
#                              over the rules          side arrays; 4.8 (4.1..7.9) with
#                                                      the last call's rule tried first
#   forced rule, per call      selector lock + lookup  one atomic load (ForcedSlot)
#   MPI_Bcast, 1-rank comm.    23.5 (22.5..28.3)      16.8 (9.8..22.7) over PMPI_Bcast;
#                                                      13.1 (12.4..25.5) with the hint
#   in situ, LD_PRELOAD, 1-rank communicator, 10^6 calls of a C program:
#     29-36 ns per call against 7 ns without the preload
#   forced rule, 4 ranks, back to back: 490 (403..633) ns through colltune
#     against 421 (373..503) ns for PMPI_Bcast on the same forced duplicate
# Usage: benches/callpath.sh [ranks=4] [runs=5] [max_bytes=4194304] [layers|b2b|both=both] [table]
set -euo pipefail
cd "$(dirname "$0")/.."
. jobs/mpirun-flags.sh
N=${1:-4}; RUNS=${2:-5}; MAX=${3:-4194304}; WHAT=${4:-both}
cargo build --release -q -p colltune-preload
PRE=$PWD/target/release/libcolltune_preload.so
OUT=$(mktemp -d)
if [ "$WHAT" != b2b ]; then
  cargo bench --no-run -q --bench callpath 2>/dev/null
  exe=$(ls -t target/release/deps/callpath-* | grep -v '\.d$' | head -1)
  for forced in "" linear binomial knomial:radix=4; do
    mpirun -n "$N" "${MPIRUN_FLAGS[@]}" -x COLLTUNE_BCAST="$forced" "$exe" 1 20000 11
  done
  if [ -n "${5:-}" ]; then
    # a table (its rules may name the library's own algorithms)
    mpirun -n "$N" "${MPIRUN_FLAGS[@]}" -x OMPI_MCA_coll_tuned_use_dynamic_rules=1 \
      -x COLLTUNE_TABLE="$(readlink -f "$5")" "$exe" 1 20000 11
  fi
fi
[ "$WHAT" = layers ] && exit 0
mpicc -O2 -o "$OUT/b2b" benches/callpath/b2b.c
# A table whose one rule names Open MPI's forced linear at every size: the
# drop-in hands it to Open MPI's rules file at MPI_Init (the handoff), so
# every call takes the one-check shortcut.
benches/linear-table.sh "$N" callpath > "$OUT/handoff.yaml"
# name | mpirun extra arguments
CONFIGS=(
  "plain|"
  "preload-library|-x LD_PRELOAD=$PRE"
  "handoff-linear|-x LD_PRELOAD=$PRE -x COLLTUNE_TABLE=$OUT/handoff.yaml"
  "ompi-linear|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm 1"
  "ours-linear|-x LD_PRELOAD=$PRE -x COLLTUNE_BCAST=linear"
  "ompi-binomial|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm 6"
  "ours-binomial|-x LD_PRELOAD=$PRE -x COLLTUNE_BCAST=binomial"
  "ompi-knomial|--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm 7 --mca coll_tuned_bcast_algorithm_knomial_radix 4"
  "ours-knomial|-x LD_PRELOAD=$PRE -x COLLTUNE_BCAST=knomial:radix=4"
)
for r in $(seq "$RUNS"); do
  for c in "${CONFIGS[@]}"; do
    name=${c%%|*}; args=${c#*|}
    # shellcheck disable=SC2086
    mpirun -n "$N" "${MPIRUN_FLAGS[@]}" $args "$OUT/b2b" "$MAX" 5 > "$OUT/$name.$r"
  done
done
python3 - "$OUT" "$RUNS" <<'PY'
import statistics as st, sys, glob, os
out, runs = sys.argv[1], int(sys.argv[2])
data = {}
for f in glob.glob(os.path.join(out, "*.*")):
    name, r = os.path.basename(f).rsplit(".", 1)
    if not r.isdigit():
        continue
    for line in open(f):
        n, med, lo, hi = line.split()
        data.setdefault(name, {}).setdefault(int(n), []).append(float(med))
sizes = sorted(data["plain"])
pairs = [("preload-library", "plain"), ("handoff-linear", "ompi-linear"), ("ours-linear", "ompi-linear"),
         ("ours-binomial", "ompi-binomial"), ("ours-knomial", "ompi-knomial")]
print(f"back to back MPI_Bcast, t_avg us per call, median of {runs} interleaved runs (min..max over runs)")
hdr = "bytes   " + "".join(f"{n:>22}" for n in ["plain", "preload-library", "handoff-linear", "ompi-linear", "ours-linear",
                                                 "ompi-binomial", "ours-binomial", "ompi-knomial", "ours-knomial"])
print(hdr)
for s in sizes:
    row = f"{s:<8}"
    for n in ["plain", "preload-library", "handoff-linear", "ompi-linear", "ours-linear", "ompi-binomial", "ours-binomial",
              "ompi-knomial", "ours-knomial"]:
        v = data[n][s]
        row += f"{st.median(v):>9.3f} ({min(v):.2f}..{max(v):.2f})"[:22].rjust(22)
    print(row)
print("\nratios of medians (ours / Open MPI's; preload-library / plain, and its difference in ns)")
print("bytes   " + "".join(f"{a+'/'+b:>30}" for a, b in pairs))
worst = {p: 0 for p in pairs}
for s in sizes:
    row = f"{s:<8}"
    for a, b in pairs:
        ma, mb = st.median(data[a][s]), st.median(data[b][s])
        worst[(a, b)] = max(worst[(a, b)], ma / mb)
        extra = f" ({(ma-mb)*1000:+.0f} ns)" if a in ("preload-library", "handoff-linear") else ""
        row += f"{ma/mb:>22.3f}{extra:>8}"
    print(row)
print("worst: " + ", ".join(f"{a}/{b} {w:.3f}" for (a, b), w in worst.items()))
PY
echo "raw outputs in $OUT"
