#!/usr/bin/env bash
# Validating the simulator on the emulated cluster (root needed): calibrate
# a model on NODES emulated nodes (2 ranks on each of the first two used),
# then for each layout in LAYOUTS measure every broadcast algorithm in both
# executions at SIZES, simulate the same points on the model, and compare:
# the predicted winner against the measured one per size, and the predicted
# time against the measured median per point (colltune simulate --compare).
# Tears the emulated cluster down at the end (also on errors).
#
# Parameters (environment):
#   NODES (4: the most any layout uses), LAYOUTS ("2x2 3x1 4x1"),
#   SIZES (1,16,256,4K,16K,64K,256K,1M), RUNS (3), BUDGET_MS (60),
#   RATE (100mbit), BURST (2kb), DELAY_US (0), OUT (results/model-validation),
#   BASELINE (none: the library's own collectives have no model),
#   SYNC (window: repetitions start at synchronised instants, as a simulated
#   call starts every rank at time 0; `barrier` for IMB's way, whose times
#   include the ranks leaving the barrier at different times),
#   OB1 (yes: give calibrate Open MPI's eager and first-fragment limits of
#   the tcp and vader transports, from ompi_info; no: fit the eager limit),
#   ACKS (first: the emulated links let TCP's acknowledgements pass queued
#   data; queued: one FIFO, a plain tbf; see jobs/emucluster/emucluster)
# Why 100 Mbit: this machine's 2 cores host all 4 emulated nodes; at 1 Gbit
# the processes, not the links, set the pace (4 ranks share 2 cores), which
# no network model should be asked to predict. A token bucket of about one
# packet (BURST) keeps the links at their nominal rate for small messages
# too: with 16 KiB, a 4 KiB linear broadcast on 4x1 took 45 us from 3 of
# its 4 roots (burst credit) and 1 ms from the fourth; with 2 KiB, 0.9 ms
# from every root.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs/install-deps.sh --test
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --locked
BIN=$PWD/target/release/colltune
EMU=$PWD/jobs/emucluster/emucluster
NODES=${NODES:-4}
LAYOUTS=${LAYOUTS:-2x2 3x1 4x1}
SIZES=${SIZES:-1,16,256,4K,16K,64K,256K,1M}
export RATE=${RATE:-100mbit} BURST=${BURST:-2kb}
OUT=${OUT:-results/model-validation}
mkdir -p "$OUT"
trap '$EMU down >/dev/null 2>&1 || true' EXIT
NODES=$NODES $EMU up

# hosts <layout>: the --host list and rank count for 2x2 / 3x1 / 3+1 layouts.
hosts() {
  local l=$1 per=() h="" np=0 i=0
  if [[ $l == *x* ]]; then
    for _ in $(seq "${l%x*}"); do per+=("${l#*x}"); done
  else
    IFS=+ read -r -a per <<< "$l"
  fi
  for k in "${per[@]}"; do i=$((i + 1)); h+="${h:+,}ctnode$i:$k"; np=$((np + k)); done
  echo "$np $h"
}

model="$OUT/emulated-$RATE.yaml"
# Open MPI's protocol limits per link (ob1 over tcp between nodes, vader inside).
ob1=()
if [ "${OB1:-yes}" = yes ] && command -v ompi_info >/dev/null; then
  limit() { ompi_info --param btl "$1" --level 9 --parsable 2>/dev/null | sed -n "s/^mca:btl:$1:param:btl_$1_$2:value://p"; }
  for link in inter:tcp intra:vader; do
    e=$(limit "${link#*:}" eager_limit) f=$(limit "${link#*:}" rndv_eager_limit)
    [ -n "$e" ] && [ -n "$f" ] && ob1+=(--ob1 "${link%%:*}=$e/$f")
  done
fi
echo "== calibrate on 2 emulated nodes x 2 ranks"
read -r np h < <(hosts 2x2)
$EMU run -np "$np" --host "$h" "$BIN" calibrate --out "$model" \
  --name "emulated-$RATE" --csv "$OUT/calibrate.csv" "${ob1[@]}" | tee "$OUT/calibrate.txt"

for layout in $LAYOUTS; do
  read -r np h < <(hosts "$layout")
  echo "== measure every broadcast algorithm on $layout ($np ranks)"
  $EMU run -np "$np" --host "$h" "$BIN" bench --collective bcast --sizes "$SIZES" \
    --runs "${RUNS:-3}" --budget-ms "${BUDGET_MS:-60}" --summary-only \
    --baseline "${BASELINE:-none}" --sync "${SYNC:-window}" \
    --csv "$OUT/measured-$layout.csv" > "$OUT/measured-$layout.txt"
  echo "== model against measurement on $layout"
  "$BIN" simulate --model "$model" --compare "$OUT/measured-$layout.csv" \
    --csv "$OUT/simulated-$layout.csv" | tee "$OUT/compare-$layout.txt"
done
