#!/usr/bin/env bash
# MPI_Init to first broadcast, with and without the interposition library,
# interleaved runs; prints medians and their ratio (target <= 1.05x).
# Usage: benches/startup.sh [ranks=4] [runs=15] [table=tuning-tables/vm-2core.yaml]
set -euo pipefail
cd "$(dirname "$0")/.."
. jobs/mpirun-flags.sh
N=${1:-4}; RUNS=${2:-15}; TABLE=${3:-tuning-tables/vm-2core.yaml}
cargo build --release -q -p colltune-preload
exe=$(mktemp -d)/init_bcast
mpicc -O2 -o "$exe" tests/c/init_bcast.c
PRE=$PWD/target/release/libcolltune_preload.so
plain=(); pre=()
for i in $(seq "$RUNS"); do
  plain+=("$(mpirun -n "$N" "${MPIRUN_FLAGS[@]}" "$exe" | awk '/init_to_first/ {print $2}')")
  pre+=("$(mpirun -n "$N" "${MPIRUN_FLAGS[@]}" -x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$TABLE" "$exe" | awk '/init_to_first/ {print $2}')")
done
python3 - "${plain[*]}" "${pre[*]}" <<'PY'
import statistics as st, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = st.median(a), st.median(b)
print(f"MPI_Init to first MPI_Bcast, {len(a)} interleaved runs each (slowest rank, us):")
print(f"  without colltune: median {ma:.0f} (min {min(a):.0f}, max {max(a):.0f})")
print(f"  with LD_PRELOAD:  median {mb:.0f} (min {min(b):.0f}, max {max(b):.0f})")
print(f"  ratio of medians: {mb/ma:.3f}x (target <= 1.05x)")
PY
