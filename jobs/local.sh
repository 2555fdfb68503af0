#!/usr/bin/env bash
# The local job: on this machine, install what is missing, build colltune,
# check every algorithm on a live communicator, and benchmark them.
#
# Parameters (environment):
#   RANKS      ranks to run with (default 4)
#   OUT        directory for results (default results/<host>)
#   COLLTUNE_MPIRUN_FLAGS  replaces the default pinning flags (jobs/mpirun-flags.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs/install-deps.sh
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# shellcheck disable=SC1091
. jobs/mpirun-flags.sh

RANKS=${RANKS:-4}
HOST=$(hostname -s)
OUT=${OUT:-results/$HOST}
mkdir -p "$OUT"

cargo build --release --locked
BIN=target/release/colltune

echo "== verify: every algorithm, both executions, every byte ($RANKS ranks)"
mpirun -n "$RANKS" "${MPIRUN_FLAGS[@]}" "$BIN" verify

echo "== benchmark: every algorithm and the MPI library's own broadcast ($RANKS ranks)"
mpirun -n "$RANKS" "${MPIRUN_FLAGS[@]}" "$BIN" bench --quick --csv "$OUT/bench.csv"
