#!/usr/bin/env bash
# The drop-in measured by colltune's own harness (issue 16: "the same with
# colltune bench"): `colltune bench` run under LD_PRELOAD of the drop-in with
# TABLE, measuring
#   interposed  MPI_Bcast through its MPI_ symbol, as an application calls
#               it: the drop-in, with the table (handed-off rules included)
#   ompi-tuned  each of Open MPI's coll/tuned algorithms forced, through
#               PMPI_Bcast on a communicator of its own: not intercepted
# every subject once per point, interleaved, in each of several runs, for
# each call pattern named (synchronized: a barrier, then one call, the
# slowest rank; imb: IMB's and OSU's t_avg, root 0; back-to-back). Prints
# bench's comparison: per size the interposed call against the best forced
# algorithm, and the geometric mean.
#
# The library's default is not measured here: under the drop-in, Open MPI's
# default decision reads the rules the drop-in handed it at MPI_Init. For the
# default, and for IMB's own measure, see jobs/imb-compare.sh.
#
# Usage: benches/dropin-bench.sh TABLE [ranks=4] [patterns=synchronized,imb]
#          [sizes=1..4M] [runs=5] [budget-ms=50]
# Writes each pattern's raw samples to results/dropin-bench/<host>/.
set -euo pipefail
cd "$(dirname "$0")/.."
TABLE=${1:?usage: benches/dropin-bench.sh TABLE [ranks] [patterns] [sizes] [runs] [budget-ms]}
[ -f "$TABLE" ] || { echo "dropin-bench: table $TABLE: no such file" >&2; exit 2; }
TABLE=$(readlink -f "$TABLE")
N=${2:-4}; PATTERNS=${3:-synchronized,imb}; SIZES=${4:-1..4M}; RUNS=${5:-5}; BUDGET=${6:-50}
. jobs/mpirun-flags.sh
cargo build --release -q -p colltune -p colltune-preload
BIN=$PWD/target/release/colltune
PRE=$PWD/target/release/libcolltune_preload.so
OUT=results/dropin-bench/$(hostname -s)
mkdir -p "$OUT"
# The table's problems, each with its line, when it has any.
"$BIN" validate "$TABLE" >&2 || { echo "dropin-bench: $TABLE is not a valid table (problems above)" >&2; exit 2; }
stamp=$(date -u +%Y%m%dT%H%M%S)
IFS=, read -r -a pats <<< "$PATTERNS"
for p in "${pats[@]}"; do
  root=()
  [ "$p" = imb ] && root=(--root 0)
  csv=$OUT/$stamp-np$N-$p.csv
  echo "== pattern $p, $N ranks, table $TABLE (raw samples: $csv)"
  mpirun -n "$N" "${MPIRUN_FLAGS[@]}" -x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$TABLE" \
    "$BIN" bench --collective bcast --baselines-only --baseline ompi-tuned,interposed \
    --pattern "$p" ${root[@]+"${root[@]}"} --sizes "$SIZES" --runs "$RUNS" \
    --budget-ms "$BUDGET" --summary-only --csv "$csv"
done
