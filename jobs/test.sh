#!/usr/bin/env bash
# The whole test suite: installs what is missing, checks for import circles
# and lints (clippy, -D warnings), then runs every test
# (MPI-free checker and unit tests, the layering checks, and the mpirun
# integration tests) against Debian's Open MPI 4.1, then the MPI-dependent
# subset against Debian's MPICH 4.0, an MPICH-ABI library (jobs/test-mpi.sh
# mpich4: its own build in target/mpich4, verify at 3 and 5 ranks
# and an uneven node layout, the drop-in checking every byte, the preload
# library refusing a program of the other family). `COLLTUNE_TEST_MPI="mpich4
# openmpi5"` chooses the other libraries (`none`: only Open MPI 4.1);
# jobs/test-mpi.sh NAME runs one by hand. On each library, Open MPI 4.1
# here and the others in jobs/test-mpi.sh, the conformance leg
# (jobs/conformance-ci.sh): MPICH's and mpi4py's nonblocking, persistent
# and intercommunicator broadcast tests, plain against preloaded.
#
# Tests that need something this machine may lack (the emulated cluster's
# network namespaces, a local Slurm, MPICH for the export test, Chromium for
# the HTML report, man, bash-completion and Lmod for the install test, the
# conformance suites' sources from apt's and PyPI's registries) say
# "SKIPPED (name): why" and pass, unless COLLTUNE_REQUIRE names them
# (comma-separated, or `all`): then a skip fails the run. In CI, where
# jobs/install-deps.sh installs all of them, every one is required.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs/install-deps.sh --test
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# shellcheck disable=SC1091
. jobs/mpirun-flags.sh
if [ -n "${CI:-}" ]; then
  export COLLTUNE_REQUIRE=${COLLTUNE_REQUIRE:-emucluster,slurm,mpich,chromium,fortran,openmpi,man,bash-completion,lmod,conformance}
fi
start=$(date +%s)

# The MPI-free layers build where no MPI can be found: no mpicc on the PATH,
# no pkg-config entry, nothing cached from a build that had them (a target
# directory of their own). colltune-mpi fails to build like this.
nompi=$(mktemp -d)
trap 'rm -rf "$nompi"' EXIT
for t in cargo rustc rustdoc cc; do ln -s "$(command -v "$t")" "$nompi/$t"; done
# (Unoptimised: the build is the point, and it takes half the time.)
env PATH="$nompi" PKG_CONFIG_LIBDIR=/nonexistent MPICC=/nonexistent CARGO_TARGET_DIR=target/no-mpi \
  cargo build --locked -p colltune-algorithms -p colltune-core
env PATH="$nompi" PKG_CONFIG_LIBDIR=/nonexistent MPICC=/nonexistent CARGO_TARGET_DIR=target/no-mpi \
  cargo build --locked -p colltune --no-default-features
target/no-mpi/debug/colltune simulate --model tuning-tables/models/test-ib.yaml --ranks 8 --ppn 4 \
  --sizes 1,64K --summary-only > /dev/null
echo "test suite: the MPI-free crates and the colltune binary without MPI build and simulate"

# No import circles between the files of any crate (the team's checker:
# a count, 0, then one line per circle).
cycles=${MODCYCLES:-../shared/tools/modcycles.py}
if [ -f "$cycles" ]; then
  found=$(python3 "$cycles")
  if [ "$(head -n 1 <<< "$found")" != 0 ]; then
    echo "$found" >&2
    echo "test suite: import circles between files (move what both sides need to a module of its own)" >&2
    exit 1
  fi
  echo "test suite: no import circles"
elif [ -n "${CI:-}" ]; then
  echo "test suite: $cycles not found: set MODCYCLES to the import-circle checker" >&2
  exit 1
else
  echo "SKIPPED (modcycles): $cycles not found (set MODCYCLES)"
fi
# Lints, every crate and target (about 2 minutes on 2 cores after the
# dependencies are built).
cargo clippy --release --locked --workspace --all-targets -- -D warnings
echo "test suite: clippy clean: $(( $(date +%s) - start )) s wall"

cargo test --release --locked --workspace "$@"
echo "test suite: Open MPI 4.1: $(( $(date +%s) - start )) s wall"
# (Not with a test filter, as below.)
if [ $# -eq 0 ]; then
  jobs/conformance-ci.sh openmpi4
  echo "test suite: Open MPI 4.1 conformance leg: $(( $(date +%s) - start )) s wall"
fi

# The MPI-dependent subset on the other libraries (not when a test filter
# was given: that asks for those tests only).
if [ $# -eq 0 ]; then
  for m in ${COLLTUNE_TEST_MPI:-mpich4}; do
    [ "$m" = none ] && continue
    # CI's budget (30 minutes on 2 cores, all of it): verify at 3 and 5
    # ranks (non-powers of two; Open MPI's verify above covers 1..8) and
    # the 3+2 layout; by hand 1..8.
    RANKS=${RANKS:-3 5} jobs/test-mpi.sh "$m"
  done
fi
echo "test suite: $(( $(date +%s) - start )) s wall"
