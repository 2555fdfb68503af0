#!/usr/bin/env bash
# Builds colltune for one MPI library, its artefacts apart from every other's:
#   jobs/build.sh --mpi NAME [cargo build arguments...]
# NAME: openmpi4 (Debian's Open MPI 4.1, the default: target/release),
# mpich4 (Debian's MPICH 4.0), openmpi5, mpich5, impi (jobs/install-mpi.sh
# installs them), mpich5-abi (the MPI standard ABI through MPICH 5's
# mpicc_abi: the binaries run on any libmpi_abi.so.1): target/NAME/release.
# Builds the colltune binary, libcolltune.so and libcolltune_preload.so
# (any further argument replaces that list: `-p ...` to choose).
#
# The same by hand: MPICC=<that MPI's mpicc> CARGO_TARGET_DIR=target/NAME cargo build --release.
# The library's directory is recorded as the binaries' run path (build.rs),
# so a build for Open MPI 5 does not load Debian's Open MPI 4.1, which has
# the same soname (libmpi.so.40). `colltune --version` names the library it
# was built for and the one it runs on.
set -euo pipefail
cd "$(dirname "$0")/.."
name=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mpi) name=${2:?--mpi needs a name}; shift 2 ;;
    --mpi=*) name=${1#--mpi=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
name=${name:-${COLLTUNE_MPI:-openmpi4}}
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name"
if [ ${#args[@]} -eq 0 ]; then
  args=(-p colltune -p colltune-capi -p colltune-preload)
fi
echo "build: $name with $MPICC into $CARGO_TARGET_DIR/release"
# rsmpi probes MPI_PKG_CONFIG and CRAY_MPICH_DIR before MPICC.
env -u MPI_PKG_CONFIG -u CRAY_MPICH_DIR nice cargo build --release --locked "${args[@]}"
bin=$CARGO_TARGET_DIR/release/colltune
if [ -x "$bin" ]; then
  "$bin" --version | sed 's/^/build: /'
fi
echo "build: run with $MPI_LAUNCHER -n 4 ${MPI_FLAGS[*]} $bin verify"
