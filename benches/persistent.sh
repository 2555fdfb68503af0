#!/usr/bin/env bash
# The per-call cost of a persistent broadcast under the drop-in against the
# library's own (issue 44): MPI_Bcast_init once, then MPI_Start + MPI_Wait
# timed per call (benches/callcost/persistent.c), plain and preloaded with a
# table whose bcast_init rule forces one of coll/libnbc's algorithms (the
# choice made once, at MPI_Bcast_init) against the library with the same
# algorithm forced at start-up (--mca coll_libnbc_ibcast_algorithm: the
# same schedule both ways), interleaved run by run, RUNS runs
# each. Prints each run's pair, the medians, the median of the per-run
# differences (preloaded - plain) and their spread. The preload library
# defines no MPI_Start or MPI_Wait (tests/preload_layout.rs checks), so the
# difference is the machine's noise around zero.
#
# Usage: benches/persistent.sh [ranks=1] [bytes=1] [iter=200000] [runs=7] [algorithm=binomial]
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=${1:-1} BYTES=${2:-1} ITER=${3:-200000} RUNS=${4:-7} ALG=${5:-binomial}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release --locked -q -p colltune-preload
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mpicc -O2 -o "$W/persistent" benches/callcost/persistent.c
{
  echo "schema: 2"
  echo "provenance: {host: bench, mpi: Open MPI, date: now, command: benches/persistent.sh, colltune: 0.1.0, source: hand-written, sweep: {mode: hand-written}}"
  echo "bcast_init:"
  echo "- {ranks: $RANKS, ppn: $RANKS, nodes: 1, rules: [{min_bytes: 0, algorithm: ompi_libnbc, params: {algorithm: $ALG}, execution: library}]}"
} >"$W/table.yaml"
run() {
  mpirun -n "$RANKS" --oversubscribe --map-by core --bind-to core:overload-allowed \
    --mca mpi_yield_when_idle 1 "$@" "$W/persistent" "$BYTES" "$ITER" | sed -n 's/^persistent: \([0-9.]*\) ns\/call/\1/p'
}
case $ALG in linear) ID=1 ;; binomial) ID=2 ;; chain) ID=3 ;; knomial) ID=4 ;;
  *) echo "persistent.sh: algorithm $ALG is none of linear, binomial, chain, knomial" >&2; exit 2 ;; esac
plain=() pre=()
for i in $(seq "$RUNS"); do
  a=$(run --mca coll_libnbc_ibcast_algorithm "$ID")
  b=$(run -x LD_PRELOAD="$PWD/target/release/libcolltune_preload.so" -x COLLTUNE_TABLE="$W/table.yaml")
  plain+=("$a") pre+=("$b")
  echo "run $i: plain $a ns, preloaded $b ns"
done
python3 - "${plain[*]}" "${pre[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
d = sorted(y - x for x, y in zip(a, b))
print(f"median per call: plain {statistics.median(a):.1f} ns, preloaded {statistics.median(b):.1f} ns")
print(f"preloaded - plain, per run: median {statistics.median(d):+.1f} ns (runs from {d[0]:+.1f} to {d[-1]:+.1f} ns)")
PY
