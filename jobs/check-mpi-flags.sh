#!/usr/bin/env bash
# Every MCA parameter the project's launcher flags set for an Open MPI
# library is one that library has:
#   jobs/check-mpi-flags.sh NAME     NAME: openmpi4 | openmpi5 (jobs/mpi-env.sh)
# Open MPI takes any `--mca NAME VALUE` (and `-x OMPI_MCA_NAME=...`) without
# a word when NAME is no parameter of it: Open MPI 5.0 renamed the
# shared-memory BTL (vader -> sm) and moved its single-copy switch to the smsc
# framework, so `--mca btl_sm_single_copy_mechanism none`, which
# jobs/mpi-env.sh passed for 5.0, did nothing there (every 5.0 run used
# single copy). This reads the names from `ompi_info --all --level 9` (its
# synonyms included) and fails, naming the parameter, where one is missing.
# The flags checked are MPI_FLAGS of jobs/mpi-env.sh (COLLTUNE_MPIRUN_FLAGS
# where set). Libraries of the MPICH family (Hydra's flags are the
# launcher's own) pass with a note. About 1 s; jobs/test-mpi.sh and
# jobs/imb-compare.sh run it first.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: jobs/check-mpi-flags.sh openmpi4|openmpi5 (any NAME of jobs/mpi-env.sh)}
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name" || exit 2
if [ "$MPI_FAMILY" != openmpi ]; then
  echo "check-mpi-flags: $name: Hydra's flags (${MPI_FLAGS[*]}) are its launcher's own; nothing to check"
  exit 0
fi
info=${MPI_PREFIX:+$MPI_PREFIX/bin/}ompi_info
[ -n "$MPI_PREFIX" ] || info=$(dirname "$(readlink -f "$MPI_LAUNCHER")")/ompi_info
[ -x "$info" ] || { echo "check-mpi-flags: $name: no ompi_info at $info" >&2; exit 2; }
known=$("$info" --all --level 9 2>/dev/null | sed -n 's/.* parameter "\([A-Za-z0-9_]*\)".*/\1/p' | sort -u)
[ -n "$known" ] || { echo "check-mpi-flags: $name: $info --all --level 9 listed no parameters" >&2; exit 2; }
names=()
for ((i = 0; i < ${#MPI_FLAGS[@]}; i++)); do
  case "${MPI_FLAGS[$i]}" in
    --mca | -mca | --gmca | -gmca) names+=("${MPI_FLAGS[$((i + 1))]:-}") ;;
    -x)
      kv=${MPI_FLAGS[$((i + 1))]:-}
      if [[ "$kv" == OMPI_MCA_* ]]; then kv=${kv#OMPI_MCA_}; names+=("${kv%%=*}"); fi ;;
  esac
done
bad=0
for n in ${names[@]+"${names[@]}"}; do
  if ! grep -qxF "$n" <<< "$known"; then
    echo "check-mpi-flags: $name: the launcher flags set \`$n\`, which is no parameter of $("$info" --version 2>/dev/null | head -1) ($info --all --level 9): Open MPI ignores it without a word; fix MPI_FLAGS in jobs/mpi-env.sh (or COLLTUNE_MPIRUN_FLAGS)" >&2
    bad=1
  fi
done
[ "$bad" = 0 ] || exit 1
echo "check-mpi-flags: $name: ${#names[@]} MCA parameter(s) of the launcher flags, each one the library has (${names[*]-})"
