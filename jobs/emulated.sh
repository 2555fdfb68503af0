#!/usr/bin/env bash
# The emulated-cluster job: on this one machine, NODES emulated nodes of PPN
# ranks each (network namespaces, rate-limited links, see
# jobs/emucluster/emucluster), then: verify every node-aware algorithm on
# that layout, measure hierarchical against the best flat algorithm at
# 1 KiB, 64 KiB and 1 MiB, tune, and write the table. Tears the emulated
# cluster down at the end (also on errors). Root needed.
#
# Parameters (environment):
#   NODES (2), PPN (2; or a layout like "3+2" for unequal nodes),
#   RATE (1gbit), DELAY_US (0), BUDGET (tuning minutes, 10),
#   OUT (results/emulated), TUNE_ARGS (extra tune arguments)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs/install-deps.sh --test
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --locked
BIN=$PWD/target/release/colltune
EMU=jobs/emucluster/emucluster
PPN=${PPN:-2}
if [[ $PPN == *+* ]]; then
  IFS=+ read -r -a per <<< "$PPN"; NODES=${#per[@]}
else
  NODES=${NODES:-2}; per=(); for _ in $(seq "$NODES"); do per+=("$PPN"); done
fi
hosts=""; np=0
for i in $(seq 1 "$NODES"); do
  k=${per[$((i-1))]}; hosts+="${hosts:+,}ctnode$i:$k"; np=$((np + k))
done
LAYOUT=$(IFS=+; echo "${per[*]}")
OUT=${OUT:-results/emulated}
mkdir -p "$OUT"
trap '$EMU down >/dev/null 2>&1 || true' EXIT
NODES=$NODES $EMU up
run() { $EMU run -np "$np" --host "$hosts" "$@"; }

echo "== verify node-aware algorithms on $NODES emulated nodes ($LAYOUT)"
run "$BIN" verify --collective bcast -a hierarchical \
  -a "hierarchical:inter=linear,intra=linear" \
  -a "hierarchical:inter=pipeline(segment=16K),intra=knomial(radix=3)" \
  -a "hierarchical:inter=scatter_allgather_ring,intra=binomial" \
  --sizes 0,1,7,4095,65537,1048579

echo "== hierarchical against flat at 1 KiB, 64 KiB, 1 MiB"
run "$BIN" bench --collective bcast --sizes 1K,64K,1M --runs 3 --baseline mpi \
  -a linear -a binomial -a knomial -a binary -a split_binary -a chain -a pipeline \
  -a scatter_allgather -a scatter_allgather_ring \
  -a hierarchical -a "hierarchical:inter=linear,intra=linear" \
  -a "hierarchical:inter=pipeline,intra=linear" \
  --summary-only --csv "$OUT/bench-$LAYOUT.csv" | tee "$OUT/bench-$LAYOUT.txt"
"$BIN" report "$OUT/bench-$LAYOUT.csv" | tee -a "$OUT/bench-$LAYOUT.txt"

echo "== tune on the emulated cluster"
csv="$OUT/tune-$LAYOUT.csv"; resume=(); [ -s "$csv" ] && resume=(--resume)
# shellcheck disable=SC2086
run "$BIN" tune --budget "${BUDGET:-10}" --csv "$csv" --table "$OUT/table-$LAYOUT.yaml" "${resume[@]}" ${TUNE_ARGS:-}
