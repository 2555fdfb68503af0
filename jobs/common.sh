# Sourced by the batch jobs and jobs/local.sh. Expects: BIN (colltune).
# colltune_batch_tune also expects OUT (shared results directory), TAG
# (names the CSV: e.g. N2-np8), LAUNCH (array: the MPI launcher with its
# options), BUDGET (minutes), TUNE_ARGS (extra tune arguments), TABLE
# (combined table to rebuild from every CSV in OUT), LAUNCHES (default 16).

# LAUNCHES: the most launches of one tune, 16 unless set (the launch is the
# unit of replication, and a launch takes seconds: docs/evidence.md; the
# later ones run only while sizes are unresolved and budget is left); anything
# but a whole number of 1 or more exits 2 with SCRIPT's name.
# Usage: colltune_launches SCRIPT
colltune_launches() {
  LAUNCHES=${LAUNCHES:-16}
  case "$LAUNCHES" in
    *[!0-9]*|0) echo "$1: LAUNCHES=$LAUNCHES: a whole number of launches, 1 or more" >&2; exit 2 ;;
  esac
}

# The sizes a further launch measures: those the table built from the
# earlier launches' CSVs (each CSV one launch) lists as unresolved,
# comma-separated; nothing when every size is resolved.
# Usage: colltune_open_sizes SCRATCH_TABLE CSV...
colltune_open_sizes() {
  local table=$1
  shift
  "$BIN" table build "$@" -o "$table" > /dev/null 2>"$table.log" ||
    { echo "colltune: no table from $* (see $table.log): no further launch" >&2; return 0; }
  "$BIN" table unresolved "$table" --sizes
}

# Whether a further launch runs, and at which sizes. Sets OPEN (the
# unresolved sizes, comma-separated, also written to SIZES_FILE so that a
# rerun resumes the same launch, which then reads them back) and
# BUDGET_LEFT (minutes); or returns 1 with the reason none runs in WHY_NOT.
# Usage: colltune_further SIZES_FILE SCRATCH_TABLE BUDGET SPENT_SECONDS CSV...
colltune_further() {
  local sizes_file=$1 table=$2 budget=$3 spent=$4
  shift 4
  OPEN= BUDGET_LEFT= WHY_NOT=
  if [ -s "$sizes_file" ]; then
    OPEN=$(cat "$sizes_file")
  else
    OPEN=$(colltune_open_sizes "$table" "$@")
  fi
  if [ -z "$OPEN" ]; then
    WHY_NOT="no size unresolved after $# launch(es)"
    return 1
  fi
  BUDGET_LEFT=$(colltune_budget_left "$budget" "$spent")
  if [ -z "$BUDGET_LEFT" ]; then
    WHY_NOT="the budget is spent; sizes left unresolved: $OPEN"
    return 1
  fi
  echo "$OPEN" > "$sizes_file"
}

# ROUNDS: the tune's further rounds inside launch L of N. A launch with
# another after it runs none (--extra-rounds 0): runs inside one launch do
# not average out what varies from launch to launch (on the 2-core VM 1,716
# further runs at 30 open sizes resolved none), so they would only spend
# the budget the later launches, which measure just the open sizes anew,
# need. The last launch keeps tune's default. Arguments that set
# --extra-rounds themselves are kept as they are.
# Usage: colltune_rounds L N TUNE_ARGUMENTS...
colltune_rounds() {
  local l=$1 n=$2
  shift 2
  ROUNDS=()
  case " $* " in *" --extra-rounds"*) return 0 ;; esac
  [ "$l" -lt "$n" ] && ROUNDS=(--extra-rounds 0)
  return 0
}

# STRIPPED: the arguments without --sizes and --stride, which a further
# launch sets itself (only the unresolved sizes, each one measured).
colltune_strip_args() {
  STRIPPED=()
  local skip=0 a
  for a in "$@"; do
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case "$a" in
      --sizes|--stride) skip=1 ;;
      --sizes=*|--stride=*) ;;
      *) STRIPPED+=("$a") ;;
    esac
  done
}

# Minutes left of BUDGET (minutes) after SPENT seconds, to one decimal;
# prints nothing when less than one minute is left.
colltune_budget_left() {
  awk -v b="$1" -v s="$2" 'BEGIN { l = b * 60 - s; if (l >= 60) printf "%.1f\n", l / 60 }'
}

# One launch of the batch job: CSV, its table, budget (minutes), then the
# tune arguments. The launcher runs in the background so that a TERM from
# the batch system (time limit, preemption) reaches the trap at once.
colltune_batch_launch() {
  local csv=$1 table=$2 budget=$3 resume=()
  shift 3
  [ -s "$csv" ] && resume=(--resume)
  echo "colltune: tuning $TAG into $csv ${resume[*]}"
  "${LAUNCH[@]}" "$BIN" tune --budget "$budget" --csv "$csv" \
      --table "$table" "${resume[@]}" "$@" &
  TUNE_PID=$!
  local rc=0
  wait $TUNE_PID || rc=$?
  # wait returns early when the trap fires: wait for the tune to finish writing
  while kill -0 $TUNE_PID 2>/dev/null; do wait $TUNE_PID || rc=$?; done
  TUNE_PID=
  return $rc
}

# One tuning job under a batch system, resumable: the sweep (tune-TAG.csv),
# then, once it is complete, up to LAUNCHES - 1 further launches
# (tune-TAG-lN.csv), each measuring only the sizes still unresolved after
# the ones before, within what is left of BUDGET. A rerun continues each
# CSV (a further launch its recorded sizes, CSV.sizes).
colltune_batch_tune() {
  mkdir -p "$OUT"
  local first="$OUT/tune-$TAG.csv" csvs=() l csv table budget open rc=0 started=$SECONDS
  colltune_launches colltune_batch_tune
  local launches=$LAUNCHES
  STOPPED=0 TUNE_PID=
  trap 'echo "colltune: batch system asked to stop: stopping after the current point"; STOPPED=1; [ -n "$TUNE_PID" ] && kill -TERM "$TUNE_PID" 2>/dev/null' TERM
  for l in $(seq 1 "$launches"); do
    csv=$first table="$OUT/table-$TAG.yaml" budget=$BUDGET
    # shellcheck disable=SC2086
    set -- ${TUNE_ARGS:-}
    if [ "$l" -gt 1 ]; then
      [ -e "$first.incomplete" ] && break   # the sweep first (requeued)
      csv="$OUT/tune-$TAG-l$l.csv" table="$OUT/table-$TAG-l$l.yaml"
      if ! colltune_further "$csv.sizes" "$OUT/table-$TAG-so-far.yaml" "$BUDGET" $((SECONDS - started)) "${csvs[@]}"; then
        echo "colltune: $TAG: $WHY_NOT"
        break
      fi
      open=$OPEN budget=$BUDGET_LEFT
      echo "colltune: $TAG: launch $l of $launches at the unresolved sizes $open ($budget min left)"
      colltune_strip_args "$@"
      set -- "${STRIPPED[@]}" --focus "${csvs[@]}"
    fi
    colltune_rounds "$l" "$launches" "$@"
    colltune_batch_launch "$csv" "$table" "$budget" "$@" "${ROUNDS[@]}" || rc=$?
    csvs+=("$csv")
    [ "$STOPPED" = 1 ] && break
  done
  trap - TERM
  # Rebuild the combined table from every CSV (one job at a time).
  (
    flock 9
    "$BIN" table build "$OUT"/tune-*.csv -o "$TABLE" ${CLUSTER:+--cluster "$CLUSTER"}
  ) 9>"$OUT/.table.lock"
  "$BIN" table unresolved "$TABLE" | sed 's/^/colltune: left unresolved in the combined table: /'
  return $rc
}
