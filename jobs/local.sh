#!/usr/bin/env bash
# The local tuning job: on this machine, install what is missing, build
# colltune, check every algorithm on a live communicator, tune broadcast and
# swap, and write the decision table tuning-tables/<host>.yaml with the raw
# samples and the tune's HTML report beside them; it ends by printing what
# to do next (the table, the line that runs a program with it, the report).
#
# Parameters (environment):
#   RANKS        rank counts to tune, space-separated (default "4"; the shipped
#                table used "4 8"); each is one mpirun job, pinned
#   BUDGET       wall-time budget per rank count, minutes, its launches
#                together (default 30)
#   LAUNCHES     at most this many separate mpirun launches per rank count
#                (default 16; the later ones only while sizes stay
#                unresolved and budget is left): on a
#                shared or oversubscribed machine one launch can run 1.5x
#                slower than the next, and the fastest algorithm can change
#                with it. The first launch sweeps every size (tune-npN.csv);
#                each later one (tune-npN-lL.csv) measures only the sizes
#                still unresolved in the table of the launches before it
#                (`colltune table unresolved --sizes`), within what is left
#                of BUDGET, and is skipped once none is. The rank counts
#                are launched in turn, and the table is built from every
#                launch, each launch's runs kept apart
#   OUT          directory for raw samples (default results/<host>)
#   TABLE        table to write (default tuning-tables/<host>.yaml)
#   TUNE_ARGS    extra arguments for `colltune tune` (e.g. "--sizes 1..1M")
#   COLLTUNE_MPIRUN_FLAGS  replaces the default pinning flags (jobs/mpirun-flags.sh)
#   COLLTUNE_MPI the MPI library to build for and run on (default openmpi4,
#                Debian's Open MPI 4.1; mpich4, openmpi5, mpich5, impi are
#                installed by jobs/install-mpi.sh: see docs/mpi-libraries.md)
# Re-running continues (--resume) each job's CSV: completed points are not
# measured again, and the table is rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=jobs/common.sh
. jobs/common.sh
colltune_launches local.sh
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

# colltune and its two libraries: the drop-in line printed at the end needs them.
jobs/build.sh --mpi "$MPI"
BIN=$CARGO_TARGET_DIR/release/colltune

first=${RANKS%% *}
echo "== verify: every algorithm, both executions, every byte ($first ranks)"
mpirun -n "$first" "${MPIRUN_FLAGS[@]}" "$BIN" verify

csvs=()
open=""
declare -A mine spent over   # per rank count: its CSVs, its seconds so far, whether it is done
for n in $RANKS; do mine[$n]=""; spent[$n]=0; over[$n]=0; done
for l in $(seq 1 "$LAUNCHES"); do
  for n in $RANKS; do
    suffix=""
    [ "$l" -gt 1 ] && suffix="-l$l"
    csv="$OUT/tune-np$n$suffix.csv"
    budget=$BUDGET
    # shellcheck disable=SC2086
    set -- ${TUNE_ARGS:-}
    [ "${over[$n]}" = 1 ] && continue   # nothing left open, or no budget
    if [ "$l" -gt 1 ]; then
      # shellcheck disable=SC2086
      if ! colltune_further "$csv.sizes" "$OUT/table-np$n-so-far.yaml" "$BUDGET" "${spent[$n]}" ${mine[$n]}; then
        echo "== tune: $n ranks, launch $l of $LAUNCHES: $WHY_NOT"
        over[$n]=1
        continue
      fi
      open=$OPEN budget=$BUDGET_LEFT
      colltune_strip_args "$@"
      # shellcheck disable=SC2086
      set -- "${STRIPPED[@]}" --focus ${mine[$n]}
    fi
    resume=()
    [ -s "$csv" ] && resume=(--resume)
    echo "== tune: $n ranks, launch $l of $LAUNCHES, budget $budget min ($csv)${open:+ at the unresolved sizes $open}"
    t0=$SECONDS
    colltune_rounds "$l" "$LAUNCHES" "$@"
    mpirun -n "$n" "${MPIRUN_FLAGS[@]}" "$BIN" tune --budget "$budget" --csv "$csv" \
      --table "$OUT/table-np$n$suffix.yaml" "${resume[@]}" "$@" "${ROUNDS[@]}"
    spent[$n]=$(( ${spent[$n]} + SECONDS - t0 ))
    mine[$n]="${mine[$n]} $csv"
    csvs+=("$csv")
    open=""
  done
done

echo "== decision table from ${csvs[*]}"
"$BIN" table build "${csvs[@]}" -o "$TABLE"

# The report: every rank count's first launch (a later launch repeats the
# run numbers, and report pools runs by number), in one CSV if several.
first_launch=("${csvs[@]:0:$(wc -w <<< "$RANKS")}")
report_csv=${first_launch[0]}
if [ ${#first_launch[@]} -gt 1 ]; then
  report_csv=$OUT/report.csv
  {
    head -n 1 "${first_launch[0]}"
    for c in "${first_launch[@]}"; do tail -n +2 "$c"; done
  } > "$report_csv"
fi
echo "== report of ${first_launch[*]}"
"$BIN" report "$report_csv" "$TABLE" --html "$OUT/report.html" > "$OUT/report.txt"

abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
preload=$(abs "$CARGO_TARGET_DIR/release/libcolltune_preload.so")
# The launch options the table was tuned with (pinning), then the drop-in.
if [ "$MPI_FAMILY" = openmpi ]; then
  pass=("${MPIRUN_FLAGS[@]}" -x "LD_PRELOAD=$preload" -x "COLLTUNE_TABLE=$(abs "$TABLE")")
  [ "$(id -u)" -eq 0 ] && pass=(--allow-run-as-root "${pass[@]}")
else
  pass=("${MPIRUN_FLAGS[@]}" -genv LD_PRELOAD "$preload" -genv COLLTUNE_TABLE "$(abs "$TABLE")")
fi
cat <<NEXT

== done. Next:
  the table:   $TABLE          (colltune show $TABLE; colltune plot $TABLE -o map.png)
  the report:  $OUT/report.html   (open it in a browser; a summary in $OUT/report.txt)
  run a program with the table, launched as it was tuned (COLLTUNE_TRACE=1: each call's choice):
    $(basename "$MPI_LAUNCHER") -n $first ${pass[*]} ./your_app
  install colltune, its man pages, completions and a modulefile with this table:
    TABLE=$TABLE jobs/install.sh
  the guide: docs/README.md
NEXT
