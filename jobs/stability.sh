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
# hits both alike), LAUNCHES (16, as jobs/local.sh and the batch jobs: each
# tune is that many launches, a and b alternating (a, b, a, b, ...); the
# first sweeps every size, each later one measures only the sizes its
# tune's launches so far leave unresolved (`colltune table unresolved
# --sizes`), within what is left of BUDGET, the same code as the scripts'
# (jobs/common.sh); each table is built from its launches' CSVs by `table
# build`, which keeps every launch apart; every launch's CSV then judges,
# and the first launch's own table is kept as a-l1.yaml, b-l1.yaml, so one
# run also shows how single sweeps agree).
#
# Evidence (schema 2 tables): each table keeps the library's decision
# wherever no candidate's gain clears the minimum with 95% confidence, and
# lists the sizes where an interval straddles it; the later launches
# measure just those. What is left is printed.
# Agreement: a size agrees where both tables choose the same or the 95%
# interval of the two choices' time ratio, each CSV one launch, lies
# within WITHIN; where it straddles WITHIN (or nothing measured both), the
# size is unresolved and JUDGE_LAUNCHES (3) referee launches (separate
# bench mpiruns measuring both choices, their runs interleaved) are added
# there, then one more at a time where it still is, up to
# JUDGE_MAX_LAUNCHES (16); sizes still unresolved are reported apart,
# never as agreement.
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
# shellcheck source=jobs/common.sh
. jobs/common.sh
colltune_launches stability.sh
[ -z "${EXTRA_LAUNCHES:-}" ] ||
  { echo "stability.sh: EXTRA_LAUNCHES is gone: LAUNCHES counts every launch of a tune, the later ones at its unresolved sizes (LAUNCHES=$((LAUNCHES + EXTRA_LAUNCHES)) for the same number)" >&2; exit 2; }
mkdir -p "$OUT"
declare -A mine spent over   # per tune: its launches' CSVs, its seconds so far, whether it is done
mine[a]="" mine[b]="" spent[a]=0 spent[b]=0 over[a]=0 over[b]=0
for l in $(seq 1 "$LAUNCHES"); do
  for t in a b; do
    if [ "$l" = 1 ]; then csv="$OUT/$t.csv"; else csv="$OUT/$t-l$l.csv"; fi
    yaml="$OUT/$t-l$l.yaml"
    if [ "${REUSE:-0}" = 1 ] && [ -s "$yaml" ] && [ -s "$csv" ]; then
      echo "== tune $t, launch $l: reusing $csv"
      mine[$t]="${mine[$t]} $csv"
      continue
    fi
    [ "${over[$t]}" = 1 ] && continue   # nothing left open, or no budget
    rm -f "$csv" "$csv.tune.yaml" "$csv.sizes"
    budget=$BUDGET open=""
    sizes=(--sizes "$SIZES")
    if [ "$l" -gt 1 ]; then
      # shellcheck disable=SC2086
      if ! colltune_further "$csv.sizes" "$OUT/$t-so-far.yaml" "$BUDGET" "${spent[$t]}" ${mine[$t]}; then
        echo "== tune $t, launch $l of $LAUNCHES: $WHY_NOT"
        over[$t]=1
        continue
      fi
      open=$OPEN budget=$BUDGET_LEFT
      # shellcheck disable=SC2206
      sizes=(--focus ${mine[$t]})
    fi
    echo "== tune $t, launch $l of $LAUNCHES: $RANKS ranks, sizes ${open:-$SIZES}, at most $budget min"
    t0=$SECONDS
    # shellcheck disable=SC2086
    colltune_rounds "$l" "$LAUNCHES" ${TUNE_ARGS:-}
    # shellcheck disable=SC2086
    mpirun -n "$RANKS" "${MPIRUN_FLAGS[@]}" "$BIN" tune --collective bcast \
      "${sizes[@]}" --budget "$budget" --budget-ms "$BUDGET_MS" \
      --csv "$csv" --table "$yaml" ${TUNE_ARGS:-} "${ROUNDS[@]}" > "$csv.log" 2>&1 ||
      { echo "stability.sh: tune $t failed, see $csv.log" >&2; tail -20 "$csv.log" >&2; exit 3; }
    spent[$t]=$(( ${spent[$t]} + SECONDS - t0 ))
    mine[$t]="${mine[$t]} $csv"
    grep -E '^(compaction|runoff|tuned in)' "$csv.log" || true
  done
done
measured=()
for t in a b; do
  echo "== table $t from its launches:${mine[$t]}"
  # shellcheck disable=SC2086
  "$BIN" table build ${mine[$t]} -o "$OUT/$t.yaml"
  left=$("$BIN" table unresolved "$OUT/$t.yaml" | wc -l)
  echo "== table $t: $left size(s) left unresolved (the library's decision kept there, or a choice not yet told apart from a faster-seeming candidate)"
  for c in ${mine[$t]}; do measured+=(--measured "$c"); done
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
  # The sizes a diff report leaves unresolved, with both choices.
  unresolved_list() {
    python3 - "$1" <<'PY'
import re, sys
units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
for line in open(sys.argv[1]):
    m = re.match(r"\s+(\d+) (B|KiB|MiB|GiB)\s+\?\s.*A: (\S+) \[(\w+)\]\s+B: (\S+) \[(\w+)\]", line)
    if m:
        n, u, a, ea, b, eb = m.groups()
        print(int(n) * units[u], a, ea, b, eb)
PY
  }
  # Referee launch K at one size: both choices in one bench mpirun.
  judge_launch() {
    local k=$1 bytes=$2 a=$3 ea=$4 b=$5 eb=$6 x s spec ex base seg default=""
    local args=(--sizes "$bytes" --collective bcast --runs "${JUDGE_RUNS:-5}" --budget-ms "$BUDGET_MS" "${same[@]}")
    local execs=() bases=() segs=()
    for x in "$a:$ea" "$b:$eb"; do
      spec=${x%:*}; ex=${x##*:}
      case "$spec" in
        ompi_tuned:algorithm=0|ompi_tuned:algorithm=0,*)
          # the library's own decision: its MPI_Bcast (bench's `mpi`,
          # relabelled below as the tune labels it)
          bases+=(mpi); default=$spec ;;
        ompi_tuned:*)
          bases+=(ompi-tuned)
          s=$(sed -n 's/.*segment=\([0-9]*\).*/\1/p' <<< "$spec"); segs+=("${s:-0}") ;;
        *) args+=(-a "$spec"); execs+=("$ex") ;;
      esac
    done
    [ ${#execs[@]} -gt 0 ] || args+=(--baselines-only)
    base=$(printf '%s\n' "${bases[@]:-none}" | sort -u | paste -sd, -)
    ex=$(printf '%s\n' "${execs[@]:-blocking}" | sort -u | paste -sd, -)
    seg=$(printf '%s\n' "${segs[@]:-0}" | sort -un | paste -sd, -)
    echo "== judging $bytes B, referee launch $k: $a [$ea] against $b [$eb]"
    mpirun -n "$RANKS" "${MPIRUN_FLAGS[@]}" "$BIN" bench "${args[@]}" --executions "$ex" \
      --baseline "$base" --ompi-segment "$seg" --csv "$OUT/judge-$bytes-$k.csv" --summary-only \
      < /dev/null >> "$OUT/judge.log" 2>&1 ||
      { echo "stability.sh: judging bench failed, see $OUT/judge.log" >&2; tail -20 "$OUT/judge.log" >&2; exit 3; }
    [ -z "$default" ] || python3 - "$OUT/judge-$bytes-$k.csv" "$default" <<'PY'
import csv, sys
path, label = sys.argv[1], sys.argv[2]
rows = list(csv.reader(open(path, newline="")))
spec, family = rows[0].index("spec"), rows[0].index("algorithm")
for r in rows[1:]:
    if r[spec] == "mpi":
        r[spec], r[family] = label, label.split(":")[0]
csv.writer(open(path, "w", newline=""), lineterminator="\n").writerows(rows)
PY
  }
  # JUDGE_LAUNCHES (3) referee launches at every unresolved size, then one
  # more at a time at the sizes still unresolved, up to
  # JUDGE_MAX_LAUNCHES (16): enough to resolve WITHIN where the two
  # choices' ratio lets itself be resolved.
  unresolved_list "$OUT/agreement-tunes.txt" > "$OUT/judge.list"
  first=${JUDGE_LAUNCHES:-3} most=${JUDGE_MAX_LAUNCHES:-16}
  [ "$most" -ge "$first" ] || most=$first
  for k in $(seq 1 "$most"); do
    if [ "$k" -gt "$first" ]; then
      judge=()
      for f in "$OUT"/judge-*.csv; do [ -s "$f" ] && judge+=(--measured "$f"); done
      "$BIN" diff "$OUT/a.yaml" "$OUT/b.yaml" "${measured[@]}" "${judge[@]}" \
        --within "$WITHIN" > "$OUT/agreement-judged.txt"
      unresolved_list "$OUT/agreement-judged.txt" > "$OUT/judge.list"
      [ -s "$OUT/judge.list" ] || break
    fi
    while read -r bytes a ea b eb; do
      judge_launch "$k" "$bytes" "$a" "$ea" "$b" "$eb"
    done < "$OUT/judge.list"
  done
  judge=()
  for f in "$OUT"/judge-*.csv; do
    [ -s "$f" ] && judge+=(--measured "$f")
  done
fi
echo "== agreement"
"$BIN" diff "$OUT/a.yaml" "$OUT/b.yaml" "${measured[@]}" \
  "${judge[@]}" --within "$WITHIN" | tee "$OUT/agreement.txt"
