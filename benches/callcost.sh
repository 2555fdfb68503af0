#!/usr/bin/env bash
# The handed-off call's deterministic cost (issue 28): instructions, cache
# lines touched and branch misses per MPI_Bcast, per layer (colltune's
# interposer apart from the library's Fortran binding and from PMPI_Bcast's
# own work), counted by callgrind's simulator, so the figures do not move
# with the machine's load (wall-clock timing on the shared 2-core VM does).
#
# benches/callcost/driver.c runs, on every rank, MPI_Bcast of BYTES at root 0
# on MPI_COMM_WORLD: from C (MPI_Bcast) and from Fortran (mpi_bcast_, called
# as gfortran's code calls it), with MPI_BYTE and a derived type (a committed
# MPI_Type_contiguous of one byte), warm (back to back) and cold (the
# simulated I1/D1/LL caches flushed before every call: 8 MiB written, 64 KiB
# of code run, so the misses counted are the distinct lines the call
# touches). Rank 0 runs under callgrind (--cache-sim=yes --branch-sim=yes),
# the others natively. Configurations, one mpirun each:
#   plain        no interposition (the library's MPI_Bcast, its Fortran binding)
#   shim         the one-line PMPI_Bcast shim (benches/callcost/shim.c): the
#                floor of any interposition
#   handoff      colltune's preload with a table whose one rule gives every size
#                to Open MPI's linear (a library rule: handed off at MPI_Init)
#   no-table     colltune's preload without a table (every call the library's
#                default, through colltune's full path)
# and, to compare the routes by which a rule naming Open MPI's linear reaches
# it (the library's share is what differs):
#   forced-init  no interposition, linear forced at start-up
#                (coll_tuned_bcast_algorithm=1)
#   rules-file   no interposition, the same rule from a coll/tuned rules file
#                (what `colltune deploy` writes for a table of library rules)
#   duplicate    the preload with the table and COLLTUNE_HANDOFF=0: the rule
#                runs on colltune's forced duplicate communicator
#   own-linear   the preload with a table whose one rule is colltune's own
#                linear broadcast (blocking: the direct path, PMPI_Isend to
#                each rank + PMPI_Waitall at the root): the same messages as
#                Open MPI's linear (forced-init), sent by colltune
# and, on Open MPI 5.0, a rule naming coll/adapt's linear (algorithm 6),
# which the rules file cannot carry:
#   adapt-init   no interposition, coll/adapt selected (priority 100) and
#                its linear forced at start-up
#   adapt-rule   the preload with a table whose one rule is
#                `ompi_adapt` linear: colltune's duplicate with adapt's
#                priority raised at its creation, adapt's algorithm and
#                segment written through MPI_T around every call
# benches/callcost/report.py prints the table: the interposer's share is
# what the call costs beyond the library's binding and PMPI_Bcast. The
# library's own share counts its progress loop too (it waits for the other
# rank), so only the interposer's figures are exact; the library's are
# printed for scale. The library's share is the calls into libmpi that move
# the data: PMPI_Bcast, or, for colltune's own algorithms, their
# point-to-point calls (PMPI_Isend, PMPI_Send, PMPI_Recv, PMPI_Waitall).
#
# Usage: benches/callcost.sh [ranks=2] [bytes=1] [warm=1000] [cold=50] [configs=plain,shim,handoff,no-table]
#   (configs: a comma list of the above; all: every one)
# COLLTUNE_MPI=openmpi5 (any Open MPI of jobs/mpi-env.sh; default openmpi4):
# the driver built with that library's mpicc, colltune built for it
# (jobs/build.sh), its launcher and flags. Without the library's Fortran
# binding (Open MPI 5.0 from pip has none) only the C entry is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
MPI=${COLLTUNE_MPI:-openmpi4}
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$MPI" || exit 2
[ "$MPI_FAMILY" = openmpi ] || { echo "callcost: $MPI: Open MPI only (its coll/tuned forcing and rules file)" >&2; exit 2; }
N=${1:-2}; BYTES=${2:-1}; WARM=${3:-1000}; COLD=${4:-50}; CONFIGS=${5:-plain,shim,handoff,no-table}
[ "$CONFIGS" = all ] && CONFIGS=plain,shim,handoff,no-table,forced-init,rules-file,duplicate,own-linear
command -v valgrind >/dev/null || { echo "callcost: needs valgrind (callgrind)" >&2; exit 2; }
jobs/build.sh --mpi "$MPI" -q -p colltune-preload >&2
PRE=$PWD/$CARGO_TARGET_DIR/release/libcolltune_preload.so
OUT=$(mktemp -d)
mkdir "$OUT/dumps"
if ! "$MPICC" -O2 -o "$OUT/driver" benches/callcost/driver.c -lmpi_mpifh 2>/dev/null; then
  echo "callcost: $MPI has no Fortran binding (libmpi_mpifh): the C entry only" >&2
  "$MPICC" -O2 -DCALLCOST_NO_FORTRAN -o "$OUT/driver" benches/callcost/driver.c
fi
"$MPICC" -O2 -shared -fPIC -o "$OUT/shim.so" benches/callcost/shim.c
benches/linear-table.sh "$N" callcost > "$OUT/handoff.yaml"
# colltune's own linear at every size for N ranks (the direct path).
sed 's/algorithm: ompi_tuned, params: {algorithm: 1}, execution: library/algorithm: linear, execution: blocking/' \
  "$OUT/handoff.yaml" > "$OUT/own-linear.yaml"
grep -q 'algorithm: linear, execution: blocking' "$OUT/own-linear.yaml" || { echo "callcost: benches/linear-table.sh changed: no own-linear table" >&2; exit 2; }
sed 's/algorithm: ompi_tuned, params: {algorithm: 1}/algorithm: ompi_adapt, params: {algorithm: 6, name: linear, segment: 0}/' \
  "$OUT/handoff.yaml" > "$OUT/adapt-rule.yaml"
# The same rule as Open MPI's rules file: linear at every size for N ranks,
# Open MPI's fixed decision from N + 1 on.
printf '1\n7\n2\n%s\n1\n0 1 0 0\n%s\n1\n0 0 0 0\n' "$N" "$((N + 1))" > "$OUT/linear.rules"
# Rank 0 under callgrind, the others native (same program, same calls).
cat > "$OUT/rank.sh" <<SH
#!/bin/sh
if [ "\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-0}}" = 0 ]; then
  exec valgrind -q --tool=callgrind --collect-atstart=no --cache-sim=yes --branch-sim=yes \\
    --I1=32768,8,64 --D1=49152,12,64 --LL=4194304,16,64 \\
    --log-file="\$CALLCOST_OUT.log" --callgrind-out-file="\$CALLCOST_OUT" "$OUT/driver" $BYTES $WARM $COLD
fi
exec "$OUT/driver" $BYTES $WARM $COLD
SH
chmod +x "$OUT/rank.sh"
args=()
for c in ${CONFIGS//,/ }; do
  case "$c" in
    plain) env=() ;;
    shim) env=(-x LD_PRELOAD="$OUT/shim.so") ;;
    handoff) env=(-x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$OUT/handoff.yaml") ;;
    no-table) env=(-x LD_PRELOAD="$PRE") ;;
    forced-init) env=(-x OMPI_MCA_coll_tuned_use_dynamic_rules=1 -x OMPI_MCA_coll_tuned_bcast_algorithm=1) ;;
    rules-file) env=(-x OMPI_MCA_coll_tuned_use_dynamic_rules=1
                     -x OMPI_MCA_coll_tuned_dynamic_rules_filename="$OUT/linear.rules") ;;
    duplicate) env=(-x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$OUT/handoff.yaml" -x COLLTUNE_HANDOFF=0) ;;
    own-linear) env=(-x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$OUT/own-linear.yaml") ;;
    adapt-init) env=(-x OMPI_MCA_coll_adapt_priority=100 -x OMPI_MCA_coll_adapt_bcast_algorithm=6) ;;
    adapt-rule) env=(-x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$OUT/adapt-rule.yaml") ;;
    *) echo "callcost: unknown configuration $c (plain, shim, handoff, no-table, forced-init, rules-file, duplicate, own-linear, adapt-init, adapt-rule)" >&2; exit 2 ;;
  esac
  "$MPI_LAUNCHER" -n "$N" "${MPI_FLAGS[@]}" "${env[@]}" -x CALLCOST_OUT="$OUT/dumps/$c" "$OUT/rank.sh" >&2
  args+=("$c=$OUT/dumps/$c")
done
echo "MPI_Bcast, $BYTES B, root 0, MPI_COMM_WORLD of $N ranks, rank 0 under callgrind; $WARM warm calls, $COLD cold calls; $MPI"
python3 benches/callcost/report.py "$WARM" "$COLD" "${args[@]}"
echo "callgrind dumps in $OUT/dumps"
