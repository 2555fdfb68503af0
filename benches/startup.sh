#!/usr/bin/env bash
# MPI_Init to first broadcast, with and without the interposition library,
# interleaved runs; prints medians and their ratio (target <= 1.05x), and
# the CPU time the ranks spent (perf stat's task-clock summed over the
# ranks: steadier than wall time on a shared machine, where the wall-clock
# ratio is mostly other jobs' noise).
# Usage: benches/startup.sh [ranks=4] [runs=15] [table=tuning-tables/vm-2core.yaml]
# (COLLTUNE_TABLE_CACHE=0 in the environment is passed on: no table cache.)
# A 1,000-rule table: python3 benches/startup-table.py > /tmp/t1000.yaml
set -euo pipefail
cd "$(dirname "$0")/.."
. jobs/mpirun-flags.sh
N=${1:-4}; RUNS=${2:-15}; TABLE=${3:-tuning-tables/vm-2core.yaml}
cargo build --release -q -p colltune-preload
dir=$(mktemp -d)
exe=$dir/init_bcast
mpicc -O2 -o "$exe" tests/c/init_bcast.c
PRE=$PWD/target/release/libcolltune_preload.so
# Each rank under perf stat where perf can count (else wall time only).
wrap=()
if perf stat -x, -e task-clock -o /dev/null true 2>/dev/null; then
  cat > "$dir/cpu.sh" <<SH
#!/bin/sh
exec perf stat -x, -e task-clock -o "$dir/rank-cpu.\$OMPI_COMM_WORLD_RANK" "\$@"
SH
  chmod +x "$dir/cpu.sh"; wrap=("$dir/cpu.sh")
fi
cpu() { if [ ${#wrap[@]} -gt 0 ]; then awk -F, '/task-clock/ {s += $1} END {print s}' "$dir"/rank-cpu.*; rm -f "$dir"/rank-cpu.*; else echo 0; fi; }
extra=()
[ -n "${COLLTUNE_TABLE_CACHE:-}" ] && extra=(-x COLLTUNE_TABLE_CACHE="$COLLTUNE_TABLE_CACHE")
plain=(); pre=(); cplain=(); cpre=()
for i in $(seq "$RUNS"); do
  plain+=("$(mpirun -n "$N" "${MPIRUN_FLAGS[@]}" "${wrap[@]}" "$exe" | awk '/init_to_first/ {print $2}')")
  cplain+=("$(cpu)")
  pre+=("$(mpirun -n "$N" "${MPIRUN_FLAGS[@]}" -x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$TABLE" "${extra[@]}" "${wrap[@]}" "$exe" | awk '/init_to_first/ {print $2}')")
  cpre+=("$(cpu)")
done
python3 - "${plain[*]}" "${pre[*]}" "${cplain[*]}" "${cpre[*]}" <<'PY'
import statistics as st, sys
a, b, ca, cb = ([float(x) for x in arg.split()] for arg in sys.argv[1:5])
ma, mb = st.median(a), st.median(b)
print(f"MPI_Init to first MPI_Bcast, {len(a)} interleaved runs each (slowest rank, us):")
print(f"  without colltune: median {ma:.0f} (min {min(a):.0f}, max {max(a):.0f})")
print(f"  with LD_PRELOAD:  median {mb:.0f} (min {min(b):.0f}, max {max(b):.0f})")
print(f"  ratio of medians: {mb/ma:.3f}x (target <= 1.05x)")
if st.median(ca) > 0:
    xa, xb = st.median(ca), st.median(cb)
    print(f"CPU time of the whole job's ranks (perf stat task-clock, summed over ranks, ms):")
    print(f"  without colltune: median {xa:.1f} (min {min(ca):.1f}, max {max(ca):.1f})")
    print(f"  with LD_PRELOAD:  median {xb:.1f} (min {min(cb):.1f}, max {max(cb):.1f})")
    print(f"  ratio of medians: {xb/xa:.3f}x")
PY
rm -rf "$dir"
