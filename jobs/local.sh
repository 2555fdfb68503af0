#!/usr/bin/env bash
# The local tuning job: on this machine, install what is missing, build
# colltune, check every algorithm on a live communicator, tune broadcast and
# swap, and write the decision table tuning-tables/<host>.yaml with the raw
# samples beside it.
#
# Parameters (environment):
#   RANKS        rank counts to tune, space-separated (default "4"; the shipped
#                table used "4 8"); each is one mpirun job, pinned
#   BUDGET       wall-time budget per tuning job, minutes (default 30)
#   OUT          directory for raw samples (default results/<host>)
#   TABLE        table to write (default tuning-tables/<host>.yaml)
#   TUNE_ARGS    extra arguments for `colltune tune` (e.g. "--sizes 1..1M")
#   COLLTUNE_MPIRUN_FLAGS  replaces the default pinning flags (jobs/mpirun-flags.sh)
#   COLLTUNE_MPI the MPI library to build for and run on (default openmpi4,
#                Debian's Open MPI 4.1; mpich4, openmpi5, mpich5, impi are
#                installed by jobs/install-mpi.sh: see README, MPI libraries)
# Re-running continues (--resume) each job's CSV: completed points are not
# measured again, and the table is rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs/install-deps.sh
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
MPI=${COLLTUNE_MPI:-openmpi4}
[ "$MPI" = openmpi4 ] || jobs/install-mpi.sh "$MPI"
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$MPI"
MPIRUN_FLAGS=("${MPI_FLAGS[@]}")
mpirun() { "$MPI_LAUNCHER" "$@"; }

RANKS=${RANKS:-4}
BUDGET=${BUDGET:-30}
HOST=$(hostname -s)
OUT=${OUT:-results/$HOST}
TABLE=${TABLE:-tuning-tables/$HOST.yaml}
mkdir -p "$OUT"

jobs/build.sh --mpi "$MPI" -p colltune
BIN=$CARGO_TARGET_DIR/release/colltune

first=${RANKS%% *}
echo "== verify: every algorithm, both executions, every byte ($first ranks)"
mpirun -n "$first" "${MPIRUN_FLAGS[@]}" "$BIN" verify

csvs=()
for n in $RANKS; do
  csv="$OUT/tune-np$n.csv"
  resume=()
  [ -s "$csv" ] && resume=(--resume)
  echo "== tune: $n ranks, budget $BUDGET min ($csv)"
  # shellcheck disable=SC2086
  mpirun -n "$n" "${MPIRUN_FLAGS[@]}" "$BIN" tune --budget "$BUDGET" --csv "$csv" \
    --table "$OUT/table-np$n.yaml" "${resume[@]}" ${TUNE_ARGS:-}
  csvs+=("$csv")
done

echo "== decision table from ${csvs[*]}"
"$BIN" table build "${csvs[@]}" -o "$TABLE"
echo "table: $TABLE"
