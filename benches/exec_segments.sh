#!/usr/bin/env bash
# The nonblocking (dataflow) execution's cost against the number of
# segments: `pipeline:segment=4096` broadcasts of 16 MiB .. 1 GiB (4,096 ..
# 262,144 segments) at 2 and 4 ranks. Prints the median time per call, per
# MiB and per segment: per MiB must stay flat as the size grows (linear
# cost). A table's last rule has no upper bound, so a choice tuned at a few
# MiB runs any larger message.
#
# Usage: benches/exec_segments.sh [colltune binary]
#   (default: target/release/colltune, built first; pass an older build to
#   compare before and after a change)
# Environment: RANKS="2 4", SIZES="16M 64M 256M 1G", SEGMENT=4096,
#   LIMIT=600 (seconds per point; a point over it is reported, and larger
#   sizes at that rank count are skipped), ROOT=0 (the bench's --root).
# A size whose buffers (one per rank) would not fit in half the available
# memory is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
. jobs/mpirun-flags.sh
BIN=${1:-target/release/colltune}
if [ "$BIN" = target/release/colltune ]; then
  cargo build --release -q -p colltune
fi
RANKS=${RANKS:-2 4}
SIZES=${SIZES:-16M 64M 256M 1G}
SEGMENT=${SEGMENT:-4096}
LIMIT=${LIMIT:-600}
ROOT=${ROOT:-0}

bytes_of() {
  local s=$1 n=${1%[KMG]}
  case $s in
    *K) echo $((n << 10)) ;;
    *M) echo $((n << 20)) ;;
    *G) echo $((n << 30)) ;;
    *) echo "$s" ;;
  esac
}
avail=$(awk '/MemAvailable/ {printf "%.0f", $2 * 1024}' /proc/meminfo)

echo "# $BIN: bcast pipeline:segment=$SEGMENT [nonblocking], root $ROOT, median of 1..3 repetitions"
printf '%6s %8s %9s %12s %10s %12s\n' ranks size segments s/call ms/MiB us/segment
for n in $RANKS; do
  over=""
  for s in $SIZES; do
    b=$(bytes_of "$s")
    segs=$(((b + SEGMENT - 1) / SEGMENT))
    if [ -n "$over" ]; then
      printf '%6s %8s %9s %12s\n' "$n" "$s" "$segs" "skipped ($over)"
      continue
    fi
    if [ $((n * b * 2)) -gt "$avail" ]; then
      printf '%6s %8s %9s %12s\n' "$n" "$s" "$segs" "skipped (memory)"
      continue
    fi
    t0=$(date +%s.%N)
    if ! out=$(timeout "$LIMIT" mpirun -n "$n" "${MPIRUN_FLAGS[@]}" "$BIN" bench \
      --collective bcast -a "pipeline:segment=$SEGMENT" --executions nonblocking \
      --sizes "$s" --runs 1 --min-reps 1 --max-reps 3 --warmup 1 --budget-ms 1 \
      --root "$ROOT" --baseline none 2>&1); then
      wall=$(echo "$(date +%s.%N) - $t0" | bc)
      printf '%6s %8s %9s %12s\n' "$n" "$s" "$segs" "over ${LIMIT}s (ran ${wall%.*}s)"
      over="$s took over ${LIMIT}s"
      continue
    fi
    # The IMB table's row: bytes reps t_min t_max t_avg t_med spread outliers
    t=$(awk -v b="$b" '$1 == b && NF == 8 {print $6; exit}' <<<"$out")
    if [ -z "$t" ]; then
      echo "no result for $s on $n ranks:" >&2
      echo "$out" >&2
      exit 1
    fi
    awk -v n="$n" -v s="$s" -v segs="$segs" -v t="$t" -v b="$b" 'BEGIN {
      printf "%6s %8s %9d %12.3f %10.3f %12.2f\n", n, s, segs, t / 1e6, t / 1e3 / (b / 1048576), t / segs
    }'
  done
done
