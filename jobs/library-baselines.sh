#!/usr/bin/env bash
# colltune's broadcasts beside the MPI library's own algorithms, in one CSV
# that `colltune report` and `colltune plot` read:
#   jobs/library-baselines.sh NAME OUT.csv [bench arguments...]
# NAME: openmpi4 | mpich4 | openmpi5 | mpich5 | impi, built with
# jobs/build.sh --mpi NAME. RANKS (default 4) ranks, pinned (jobs/mpi-env.sh's
# flags for that launcher). Bench arguments default to --collective bcast.
#
# - Open MPI and MPICH force their algorithms inside one process (the
#   default baselines: `ompi-tuned`, coll/tuned through MPI_T; on Open MPI
#   5.0 also `ompi-adapt`, coll/adapt selected on a communicator of its own
#   and its algorithm written through MPI_T; and `mpich-algorithms`,
#   MPIR_CVAR_BCAST_INTRA_ALGORITHM through MPI_T, per call), so this is one
#   `colltune bench`, interleaved with colltune's points.
# - openmpi5: first jobs/check-ompi-forcing.sh CHECK=tuned,adapt,han proves
#   on this library that each forced choice takes effect (coll_base_verbose
#   names the component a duplicate selected; the pml monitoring shows
#   each algorithm's messages equal those forced by the environment at
#   MPI_Init; as root, coll/han's on the emulated cluster);
#   CHECK_FORCING=0 skips it. coll/han has no baselines on one node: Open
#   MPI 5.0 disqualifies it on any communicator of one node (that check
#   shows it); bench measures its choices only across nodes. Then the CSV
#   must hold coll/tuned and coll/adapt rows.
# - Intel MPI chooses its broadcast by I_MPI_ADJUST_BCAST, read at MPI_Init,
#   and exposes no MPIR_CVAR_BCAST_INTRA_ALGORITHM: one bench of colltune's
#   algorithms and the library's default MPI_Bcast, then, per algorithm id
#   N, one `bench --baselines-only --baseline mpi` with I_MPI_ADJUST_BCAST=N,
#   its rows labelled `impi:I_MPI_ADJUST_BCAST=N,name=<Intel's name>`
#   (--baseline-label); the CSVs are merged under one header. The ids are
#   IMPI_BCAST_IDS (default 1-11, the algorithms Intel's Developer Reference
#   names for I_MPI_ADJUST_BCAST; `impi_info -v I_MPI_ADJUST_BCAST` gives
#   the range of presets this library takes, and ids past 11 are labelled
#   name=preset_N). Each of these runs is a process of its own, so the
#   forced algorithms are not interleaved with colltune's points as the
#   in-process baselines are.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: jobs/library-baselines.sh NAME OUT.csv [bench arguments...]}
out=${2:?usage: jobs/library-baselines.sh NAME OUT.csv [bench arguments...]}
shift 2
bench_args=("$@")
[ ${#bench_args[@]} -gt 0 ] || bench_args=(--collective bcast)
RANKS=${RANKS:-4}
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name"
bin=$CARGO_TARGET_DIR/release/colltune
[ -x "$bin" ] || { echo "library-baselines: $bin is missing: run jobs/build.sh --mpi $name" >&2; exit 2; }
launch() {
  "$MPI_LAUNCHER" -n "$RANKS" "${MPI_FLAGS[@]}" "$@"
}

if [ "$name" != impi ]; then
  if [ "$name" = openmpi5 ] && [ "${CHECK_FORCING:-1}" != 0 ]; then
    echo "library-baselines: Open MPI 5: does forcing coll/tuned and coll/adapt take effect here? (jobs/check-ompi-forcing.sh)"
    CHECK=${CHECK:-tuned,adapt,han} jobs/check-ompi-forcing.sh "$name" "$RANKS" \
      || { echo "library-baselines: forcing does not take effect as checked: no baselines under names that did not run" >&2; exit 1; }
  fi
  launch "$bin" bench "${bench_args[@]}" --csv "$out"
  if [ "$name" = openmpi5 ] && [[ " ${bench_args[*]} " != *" --baseline"* ]]; then
    for fam in ompi_tuned ompi_adapt; do
      rows=$(grep -c ",$fam,\"\\?$fam:" "$out" || true)
      [ "$rows" -gt 0 ] || { echo "library-baselines: no $fam samples in $out (bench said why above)" >&2; exit 1; }
      echo "library-baselines: $rows samples of $fam"
    done
  fi
  "$bin" report --comparison "$out"
  exit 0
fi

# Intel's names for I_MPI_ADJUST_BCAST's algorithms (Developer Reference,
# I_MPI_ADJUST family), written as one word each.
impi_bcast_name() {
  case "$1" in
    1) echo binomial ;;
    2) echo recursive_doubling ;;
    3) echo ring ;;
    4) echo topology_aware_binomial ;;
    5) echo topology_aware_recursive_doubling ;;
    6) echo topology_aware_ring ;;
    7) echo shumilin ;;
    8) echo knomial ;;
    9) echo topology_aware_shm_flat ;;
    10) echo topology_aware_shm_knomial ;;
    11) echo topology_aware_shm_knary ;;
    *) echo "preset_$1" ;;
  esac
}
ids=${IMPI_BCAST_IDS:-1 2 3 4 5 6 7 8 9 10 11}
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
echo "library-baselines: Intel MPI: colltune's algorithms and the default MPI_Bcast (I_MPI_ADJUST_BCAST unset)"
env -u I_MPI_ADJUST_BCAST "$MPI_LAUNCHER" -n "$RANKS" "${MPI_FLAGS[@]}" "$bin" bench "${bench_args[@]}" --baseline mpi --csv "$parts/0.csv"
for id in $ids; do
  label="impi:I_MPI_ADJUST_BCAST=$id,name=$(impi_bcast_name "$id")"
  echo "library-baselines: Intel MPI: I_MPI_ADJUST_BCAST=$id ($label)"
  if ! I_MPI_ADJUST_BCAST=$id launch "$bin" bench "${bench_args[@]}" --baselines-only --baseline mpi \
      --baseline-label "$label" --csv "$parts/$id.csv"; then
    echo "library-baselines: I_MPI_ADJUST_BCAST=$id failed; left out" >&2
    rm -f "$parts/$id.csv"
  fi
done
header=$(head -n 1 "$parts/0.csv")
{
  echo "$header"
  for f in "$parts"/*.csv; do
    [ "$(head -n 1 "$f")" = "$header" ] || { echo "library-baselines: $f has another header" >&2; exit 3; }
    tail -n +2 "$f"
  done
} > "$out"
echo "library-baselines: merged $(ls "$parts"/*.csv | wc -l) runs into $out"
"$bin" report --comparison "$out"
