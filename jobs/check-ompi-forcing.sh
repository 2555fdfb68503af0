#!/usr/bin/env bash
# Checks that forcing an Open MPI coll/tuned broadcast algorithm through the
# MPI tool interface takes effect on this library, the way colltune's
# `bench --baseline ompi-tuned` forces its baselines:
#   jobs/check-ompi-forcing.sh openmpi4|openmpi5 [RANKS]
# For each algorithm 1..9, tests/c/force_tuned.c runs twice under Open MPI's
# pml monitoring (which counts the messages between every pair of ranks):
# forced with MPI_T_cvar_write + MPI_Comm_dup, and forced by the environment
# at MPI_Init (OMPI_MCA_coll_tuned_bcast_algorithm, as Open MPI documents).
# The pattern of messages rank 0 sends must be the same; and algorithm 1
# (basic linear: the root sends to every rank) must differ from 6 (binomial).
# Exit 1 naming the algorithm where they differ.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: jobs/check-ompi-forcing.sh openmpi4|openmpi5 [ranks]}
ranks=${2:-4}
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name"
[ "$MPI_FAMILY" = openmpi ] || { echo "check-ompi-forcing: $name is not Open MPI" >&2; exit 2; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$MPICC" -O2 -o "$d/force_tuned" tests/c/force_tuned.c
# Rank 0's sends: "peer bytes msgs" per destination, from the monitoring matrix.
sends() { # mode alg
  local extra=() arg=$2
  if [ "$1" = env ]; then extra=(-x "OMPI_MCA_coll_tuned_bcast_algorithm=$2"); arg=-1; fi
  OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_pml_monitoring_enable=1 OMPI_MCA_pml_monitoring_enable_output=1 \
    timeout 300 "$MPI_LAUNCHER" -n "$ranks" "${MPI_FLAGS[@]}" "${extra[@]}" "$d/force_tuned" "$arg" > "$d/out" 2>&1 || {
    tail -20 "$d/out" >&2
    echo "check-ompi-forcing: the run ($1, algorithm $2) failed" >&2
    exit 1
  }
  grep -q "force_tuned: all bytes correct" "$d/out" || { tail -20 "$d/out" >&2; exit 1; }
  # Point-to-point section, rank 0's lines: E 0 <peer> <bytes> bytes <msgs> msgs sent ...
  awk '/POINT TO POINT/{p=1} /COLLECTIVES/{p=0} p && ($1=="E" || $1=="I") && $2==0 {print $3, $4, $6}' "$d/out" | sort -n | tr '\n' ';'
}
rc=0
declare -A seen
# The monitoring writes its matrix at MPI_Finalize from every rank at once:
# a line can be broken by another rank's output, so an empty answer is
# measured again (twice at most).
sends_retry() {
  local r="" i
  for i in 1 2 3; do
    r=$(sends "$@")
    [ -n "$r" ] && break
  done
  echo "$r"
}
for alg in 1 2 3 4 5 6 7 8 9; do
  a=$(sends_retry mpit "$alg")
  b=$(sends_retry env "$alg")
  seen[$alg]=$a
  if [ "$a" = "$b" ]; then
    echo "check-ompi-forcing ($name, $ranks ranks): algorithm $alg: forced through MPI_T = forced at init: rank 0 sends $a"
  else
    echo "check-ompi-forcing ($name, $ranks ranks): algorithm $alg: MPI_T forcing did NOT take effect: MPI_T $a, at init $b" >&2
    rc=1
  fi
done
if [ "${seen[1]}" = "${seen[6]}" ]; then
  echo "check-ompi-forcing ($name): basic linear and binomial send the same messages: the monitoring cannot tell algorithms apart here" >&2
  rc=1
fi
exit $rc
