#!/usr/bin/env bash
# Two independent tunes on this machine, then how far they agree, measured:
# at each size of the grid, the time of table A's choice against table B's
# choice in each tune's own samples (`colltune diff --measured`), and the
# rules of each table before and after compaction.
#
#   jobs/stability.sh                      # 4 ranks, 1..64K, 6 min per tune
#   RANKS=8 SIZES=1..1M BUDGET=20 jobs/stability.sh
#
# Environment: RANKS (4), SIZES (1..64K), BUDGET (minutes per tune, 6),
# BUDGET_MS (per point and run, 20), WITHIN (0.05: "agree" = the other's
# choice is within 5%), OUT (results/stability-<date>), COLLTUNE (the binary,
# target/release/colltune), TUNE_ARGS (more tune options, e.g.
# "--pattern back-to-back"), REUSE=1 (keep tunes already in OUT), JUDGE=0
# (do not measure, with `bench`, the two choices at sizes where neither tune
# measured both; by default they are, so every size is judged), JUDGE_RUNS
# (5: that bench's runs, each measuring both choices in turn, so a drift
# hits both alike), LAUNCHES (1: each tune one mpirun; 2 or more: each tune
# is that many launches, a and b alternating (a, b, a, b), each table built
# from its launches' CSVs by `table build`, which keeps every launch apart;
# every launch's CSV then judges, and each launch's own table is kept as
# a-l1.yaml, b-l1.yaml, ... so one run also shows how single launches agree).
#
# Evidence (schema 2 tables): each table keeps the library's decision
# wherever no candidate's gain clears the minimum with 95% confidence, and
# lists the sizes where an interval straddles it (`colltune table
# unresolved`). EXTRA_LAUNCHES (2) further launches per tune measure just
# those sizes (each a separate mpirun, appended as a launch, the table
# rebuilt), until none is left or they are spent; what is left is printed.
# Agreement: a size agrees where both tables choose the same or the 95%
# interval of the two choices' time ratio, each CSV one launch, lies
# within WITHIN; where it straddles WITHIN (or nothing measured both), the
# size is unresolved and JUDGE_LAUNCHES (3) referee launches (separate
# bench mpiruns measuring both choices, their runs interleaved) are added
# there; sizes still unresolved are reported apart, never as agreement.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=jobs/mpirun-flags.sh
. jobs/mpirun-flags.sh
RANKS=${RANKS:-4}
SIZES=${SIZES:-1..64K}
BUDGET=${BUDGET:-6}
BUDGET_MS=${BUDGET_MS:-20}
WITHIN=${WITHIN:-0.05}
OUT=${OUT:-results/stability-$(date -u +%Y%m%dT%H%M%S)}
BIN=${COLLTUNE:-target/release/colltune}
[ -x "$BIN" ] || { echo "stability.sh: $BIN not built: cargo build --release (or set COLLTUNE)" >&2; exit 2; }
LAUNCHES=${LAUNCHES:-1}
EXTRA_LAUNCHES=${EXTRA_LAUNCHES:-2}
case "$LAUNCHES" in
  ''|*[!0-9]*|0) echo "stability.sh: LAUNCHES=$LAUNCHES: a whole number of launches, 1 or more" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
# Launch l of tune t: its CSV and its own table.
csv_of() { if [ "$2" = 1 ]; then echo "$OUT/$1.csv"; else echo "$OUT/$1-l$2.csv"; fi; }
yaml_of() { if [ "$LAUNCHES" = 1 ]; then echo "$OUT/$1.yaml"; else echo "$OUT/$1-l$2.yaml"; fi; }
for l in $(seq 1 "$LAUNCHES"); do
  for t in a b; do
    csv=$(csv_of "$t" "$l"); yaml=$(yaml_of "$t" "$l")
    if [ "${REUSE:-0}" = 1 ] && [ -s "$yaml" ] && [ -s "$csv" ]; then
      echo "== tune $t, launch $l: reusing $yaml"
      continue
    fi
    rm -f "$csv" "$csv.tune.yaml"
    echo "== tune $t, launch $l of $LAUNCHES: $RANKS ranks, sizes $SIZES, at most $BUDGET min"
    # shellcheck disable=SC2086
    mpirun -n "$RANKS" "${MPIRUN_FLAGS[@]}" "$BIN" tune --collective bcast \
      --sizes "$SIZES" --budget "$BUDGET" --budget-ms "$BUDGET_MS" \
      --csv "$csv" --table "$yaml" ${TUNE_ARGS:-} > "$csv.log" 2>&1 ||
      { echo "stability.sh: tune $t failed, see $csv.log" >&2; tail -20 "$csv.log" >&2; exit 3; }
    grep -E '^(compaction|runoff|tuned in)' "$csv.log" || true
  done
done
measured=()
for t in a b; do
  csvs=()
  for l in $(seq 1 "$LAUNCHES"); do csvs+=("$(csv_of "$t" "$l")"); done
  if [ "$LAUNCHES" -gt 1 ]; then
    echo "== table $t from its $LAUNCHES launches"
    "$BIN" table build "${csvs[@]}" -o "$OUT/$t.yaml"
  fi
  # Further launches where the evidence straddles the minimum gain.
  for x in $(seq 1 "$EXTRA_LAUNCHES"); do
    open=$("$BIN" table unresolved "$OUT/$t.yaml" | awk -v r="$RANKS" '$1 == "bcast" && $2 == r { print $5 }' | sort -un | paste -sd, -)
    [ -n "$open" ] || break
    csv="$OUT/$t-x$x.csv"
    rm -f "$csv" "$csv.tune.yaml"
    echo "== tune $t, extra launch $x of $EXTRA_LAUNCHES at the unresolved sizes $open"
    # shellcheck disable=SC2086
    mpirun -n "$RANKS" "${MPIRUN_FLAGS[@]}" "$BIN" tune --collective bcast \
      --sizes "$open" --budget "$BUDGET" --budget-ms "$BUDGET_MS" --exhaustive \
      --csv "$csv" --table "$OUT/$t-x$x.yaml" ${TUNE_ARGS:-} > "$csv.log" 2>&1 ||
      { echo "stability.sh: extra launch of $t failed, see $csv.log" >&2; tail -20 "$csv.log" >&2; exit 3; }
    csvs+=("$csv")
    "$BIN" table build "${csvs[@]}" -o "$OUT/$t.yaml"
  done
  left=$("$BIN" table unresolved "$OUT/$t.yaml" | wc -l)
  echo "== table $t: $left size(s) left unresolved (the library's decision kept there, or a choice not yet told apart from a faster-seeming candidate)"
  for c in "${csvs[@]}"; do measured+=(--measured "$c"); done
done
# Where neither tune measured both choices (the adaptive search pruned one),
# measure the two there, the same way (the tunes' pattern, root, repetition
# and cache options), so every size is judged by a measurement.
"$BIN" diff "$OUT/a.yaml" "$OUT/b.yaml" "${measured[@]}" \
  --within "$WITHIN" > "$OUT/agreement-tunes.txt"
judge=()
if [ "${JUDGE:-1}" = 1 ] && grep -qE '^ +[0-9]+ [KMG]?i?B +\? ' "$OUT/agreement-tunes.txt"; then
  # bench options from TUNE_ARGS that mean the same there
  # shellcheck disable=SC2086
  set -- ${TUNE_ARGS:-}
  same=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --pattern|--root|--max-reps|--min-reps|--cache|--sync) same+=("$1" "$2"); shift 2 ;;
      *) shift ;;
    esac
  done
  rm -f "$OUT"/judge-*.csv "$OUT/judge.log"
  python3 - "$OUT/agreement-tunes.txt" > "$OUT/judge.list" <<'PY'
import re, sys
units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
for line in open(sys.argv[1]):
    m = re.match(r"\s+(\d+) (B|KiB|MiB|GiB)\s+\?\s.*A: (\S+) \[(\w+)\]\s+B: (\S+) \[(\w+)\]", line)
    if m:
        n, u, a, ea, b, eb = m.groups()
        print(int(n) * units[u], a, ea, b, eb)
PY
  while read -r bytes a ea b eb; do
    args=(--sizes "$bytes" --collective bcast --runs "${JUDGE_RUNS:-5}" --budget-ms "$BUDGET_MS" "${same[@]}")
    # JUDGE_LAUNCHES separate launches, so the referee's interval has
    # launches as its replicates
    execs=()
    base=none
    segs=()
    for x in "$a:$ea" "$b:$eb"; do
      spec=${x%:*}; ex=${x##*:}
      case "$spec" in
        ompi_tuned:*)
          base=ompi-tuned
          s=$(sed -n 's/.*segment=\([0-9]*\).*/\1/p' <<< "$spec"); segs+=("${s:-0}") ;;
        *) args+=(-a "$spec"); execs+=("$ex") ;;
      esac
    done
    [ ${#execs[@]} -gt 0 ] || args+=(-a linear)
    ex=$(printf '%s\n' "${execs[@]:-blocking}" | sort -u | paste -sd, -)
    seg=$(printf '%s\n' "${segs[@]:-0}" | sort -un | paste -sd, -)
    for k in $(seq 1 "${JUDGE_LAUNCHES:-3}"); do
      echo "== judging $bytes B, referee launch $k: $a [$ea] against $b [$eb]"
      mpirun -n "$RANKS" "${MPIRUN_FLAGS[@]}" "$BIN" bench "${args[@]}" --executions "$ex" \
        --baseline "$base" --ompi-segment "$seg" --csv "$OUT/judge-$bytes-$k.csv" --summary-only \
        < /dev/null >> "$OUT/judge.log" 2>&1 ||
        { echo "stability.sh: judging bench failed, see $OUT/judge.log" >&2; tail -20 "$OUT/judge.log" >&2; exit 3; }
    done
  done < "$OUT/judge.list"
  for f in "$OUT"/judge-*.csv; do
    [ -s "$f" ] && judge+=(--measured "$f")
  done
fi
echo "== agreement"
"$BIN" diff "$OUT/a.yaml" "$OUT/b.yaml" "${measured[@]}" \
  "${judge[@]}" --within "$WITHIN" | tee "$OUT/agreement.txt"
