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
# "--pattern back-to-back"), REUSE=1 (keep tunes already in OUT).
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
mkdir -p "$OUT"
for t in a b; do
  if [ "${REUSE:-0}" = 1 ] && [ -s "$OUT/$t.yaml" ]; then
    echo "== tune $t: reusing $OUT/$t.yaml"
    continue
  fi
  rm -f "$OUT/$t.csv" "$OUT/$t.csv.tune.yaml"
  echo "== tune $t: $RANKS ranks, sizes $SIZES, at most $BUDGET min"
  # shellcheck disable=SC2086
  mpirun -n "$RANKS" "${MPIRUN_FLAGS[@]}" "$BIN" tune --collective bcast \
    --sizes "$SIZES" --budget "$BUDGET" --budget-ms "$BUDGET_MS" \
    --csv "$OUT/$t.csv" --table "$OUT/$t.yaml" ${TUNE_ARGS:-} > "$OUT/$t.log" 2>&1 ||
    { echo "stability.sh: tune $t failed, see $OUT/$t.log" >&2; tail -20 "$OUT/$t.log" >&2; exit 3; }
  grep -E '^(compaction|tuned in)' "$OUT/$t.log" || true
done
echo "== agreement"
"$BIN" diff "$OUT/a.yaml" "$OUT/b.yaml" --measured "$OUT/a.csv" --measured "$OUT/b.csv" \
  --within "$WITHIN" | tee "$OUT/agreement.txt"
