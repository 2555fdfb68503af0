#!/usr/bin/env bash
# The handoff's per-call cost in situ (issue 16): IMB-MPI1 Bcast at small
# sizes, interleaved rounds of
#   forced     Open MPI's forced algorithm ALG, no interposition (the floor)
#   handoff    the drop-in with TABLE (its library rules handed to Open MPI's
#              rules file at MPI_Init: one size check per call)
#   full       the same with COLLTUNE_HANDOFF=0 (the full dispatch: state
#              lookup, decision, the forced duplicate)
#   thin       a one-line C wrapper around PMPI_Bcast under LD_PRELOAD, with
#              ALG forced (the cost of any interposition)
#   export     no interposition: TABLE exported to Open MPI's rules file
#              (`colltune export --format openmpi`) and read by Open MPI
#              itself (what the handoff costs in Open MPI's rules lookup,
#              apart from colltune's per-call check)
# and per size the median over rounds of each round's ratio to `forced`
# (ratios within a round, since this machine's run-to-run spread is larger
# than the effect), with quartiles; each round runs the configurations in
# an order rotated from the round before (a position in the round is no
# advantage).
# BEFORE=path/to/an/older/libcolltune_preload.so adds its handoff as
# `before` in the same rounds (a change's effect, measured in one run);
# BEFORE="name=path,name=path" adds several, each under its name;
# BEFORE_FULL="name=path,..." the same with COLLTUNE_HANDOFF=0 (the full
# path of an older build).
# Usage: benches/handoff.sh IMB-MPI1 TABLE [ranks=4] [rounds=15] [msglog=0:10] [iter=5000] [alg=1]
# TABLE's rules at these sizes should name Open MPI's algorithm ALG.
set -euo pipefail
cd "$(dirname "$0")/.."
IMB=${1:?usage: benches/handoff.sh IMB-MPI1 TABLE [ranks] [rounds] [msglog] [iter] [alg]}
TABLE=$(readlink -f "${2:?a table}")
N=${3:-4}; ROUNDS=${4:-15}; MSGLOG=${5:-0:10}; ITER=${6:-5000}; ALG=${7:-1}
. jobs/mpirun-flags.sh
# Every older build named must be there (else its rounds would silently be
# the library's own broadcast: a preload that does not exist is skipped).
for b in ${BEFORE:+${BEFORE//,/ }} ${BEFORE_FULL:+${BEFORE_FULL//,/ }}; do
  f=${b#*=}
  [ -f "$f" ] || { echo "handoff.sh: BEFORE/BEFORE_FULL: $f: no such file (give name=path/to/libcolltune_preload.so)" >&2; exit 2; }
done
cargo build --release -q -p colltune-preload -p colltune
PRE=$PWD/target/release/libcolltune_preload.so
OUT=$(mktemp -d)
target/release/colltune export "$TABLE" --format openmpi -o "$OUT/export.rules" 2> "$OUT/export.log" || {
  cat "$OUT/export.log" >&2; echo "handoff.sh: $TABLE could not be exported" >&2; exit 2; }
cat > "$OUT/thin.c" <<'C'
#include <mpi.h>
int MPI_Bcast(void *b, int c, MPI_Datatype d, int r, MPI_Comm comm) { return PMPI_Bcast(b, c, d, r, comm); }
C
mpicc -O2 -shared -fPIC -o "$OUT/libthin.so" "$OUT/thin.c"
FORCE=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm "$ALG")
csv=$OUT/handoff.csv
echo "config,bytes,t_avg,run" > "$csv"
one() {   # one NAME RUN mpirun-arguments...
  local name=$1 run=$2; shift 2
  mpirun -n "$N" "${MPIRUN_FLAGS[@]}" "$@" "$IMB" Bcast -npmin "$N" -iter "$ITER" \
      -iter_policy off -zero_size off -msglog "$MSGLOG" -time 1000 2>&1 |
    awk -v n="$name" -v r="$run" '/Benchmarking Bcast/{on=1;next}
      on && /^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ *$/ {print n","$1","$5","r}' >> "$csv"
}
# The configurations of a round, by name; older builds by their names,
# with their library and whether their handoff is off.
configs=(forced handoff)
declare -A OLD_LIB=() OLD_FULL=()
if [ -n "${BEFORE:-}" ]; then
  IFS=, read -ra befores <<< "$BEFORE"
  for b in "${befores[@]}"; do
    case "$b" in *=*) bn=${b%%=*}; bp=${b#*=} ;; *) bn=before; bp=$b ;; esac
    configs+=("$bn"); OLD_LIB[$bn]=$(readlink -f "$bp")
  done
fi
if [ -n "${BEFORE_FULL:-}" ]; then
  IFS=, read -ra befores <<< "$BEFORE_FULL"
  for b in "${befores[@]}"; do
    bn=${b%%=*}; configs+=("$bn"); OLD_LIB[$bn]=$(readlink -f "${b#*=}"); OLD_FULL[$bn]=1
  done
fi
configs+=(full thin export)
# One configuration's IMB run: NAME ROUND.
config() {
  local c=$1 r=$2
  case "$c" in
    forced) one forced "$r" "${FORCE[@]}" ;;
    handoff) one handoff "$r" -x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$TABLE" ;;
    full) one full "$r" -x LD_PRELOAD="$PRE" -x COLLTUNE_TABLE="$TABLE" -x COLLTUNE_HANDOFF=0 ;;
    thin) one thin "$r" -x LD_PRELOAD="$OUT/libthin.so" "${FORCE[@]}" ;;
    export) one export "$r" --mca coll_tuned_use_dynamic_rules 1 \
              --mca coll_tuned_dynamic_rules_filename "$OUT/export.rules" ;;
    *) one "$c" "$r" -x LD_PRELOAD="${OLD_LIB[$c]}" -x COLLTUNE_TABLE="$TABLE" \
         ${OLD_FULL[$c]:+-x COLLTUNE_HANDOFF=0} ;;
  esac
}
n=${#configs[@]}
for r in $(seq "$ROUNDS"); do
  for k in $(seq 0 $((n - 1))); do
    config "${configs[$(( (k + r - 1) % n ))]}" "$r"
  done
done
echo "IMB-MPI1 Bcast t_avg, $N ranks, -iter $ITER, $ROUNDS interleaved rounds, $(mpirun --version | head -1), table $TABLE"
python3 - "$csv" <<'PY'
import csv, math, statistics as st, sys
from collections import defaultdict
t = defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    t[(r["config"], int(r["bytes"]))][int(r["run"])] = float(r["t_avg"])
sizes = sorted({k[1] for k in t})
named = sorted({k[0] for k in t} - {"forced", "handoff", "full", "thin", "export"})
others = [c for c in ["handoff", *named, "export", "full", "thin"] if (c, sizes[0]) in t]
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print("per size: forced's median t_avg (us); each config's median per-round ratio to forced [quartiles]")
print(f"{'bytes':>7} {'forced us':>10}" + "".join(f"{c:>22}" for c in others))
per = defaultdict(list)
for b in sizes:
    f = t[("forced", b)]
    row = f"{b:>7} {st.median(f.values()):>10.3f}"
    for c in others:
        rs = [t[(c, b)][r] / f[r] for r in f if r in t[(c, b)] and f[r] > 0]
        q = st.quantiles(rs, n=4) if len(rs) > 1 else rs * 3
        per[c].append(st.median(rs))
        row += f"{st.median(rs):>9.3f} [{q[0]:.2f},{q[2]:.2f}]".rjust(22)
    print(row)
for c in others:
    print(f"{c}: geomean {gm(per[c]):.3f}, sizes above 1.15x: {sum(x > 1.15 for x in per[c])} of {len(per[c])}")
PY
echo "raw: $csv"
