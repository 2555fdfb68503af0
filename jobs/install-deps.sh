#!/usr/bin/env bash
# Installs what colltune needs on Debian or Ubuntu, only what is missing:
# one MPI (Debian's Open MPI 4.1: library, headers, mpirun), libclang for
# rsmpi's bindgen, a C toolchain and pkg-config, and a Rust toolchain
# (rustup) if none is on the PATH. That is all jobs/local.sh needs.
#
# `jobs/install-deps.sh --test` adds what the test suite needs besides
# (jobs/test.sh passes it): MPICH (the MPICH-ABI tests and the MPICH export;
# Open MPI stays the default `mpirun`/`mpicc`), Slurm and munge (the
# batch-system test runs a one-node Slurm on localhost), iproute2 and
# util-linux (the emulated cluster), chromium (tests/pictures.rs renders the
# HTML report in a headless browser), man-db, bash-completion and lmod
# (tests/install.rs: `man colltune`, tab completion and the modulefile after
# jobs/install.sh), python3-venv and xz-utils (the conformance leg,
# jobs/conformance-ci.sh: its sources are fetched here into
# ~/.cache/colltune/conformance by jobs/conformance-sources.sh, MPICH's tests
# from Debian's source package, mpi4py's from PyPI). Other MPI libraries:
# jobs/install-mpi.sh.
# Idempotent: a second run installs nothing and takes well under a second.
# Runs as root, or as a user with sudo.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  SUDO="sudo"
fi

pkgs=(libopenmpi-dev openmpi-bin libclang-dev clang pkg-config gcc make)
if [ "${1:-}" = "--test" ]; then
  # python3: the measurement scripts' analysis (jobs/imb-compare.sh --analyse, tests/scripts.rs)
  pkgs+=(mpich libmpich-dev slurm-wlm munge iproute2 util-linux chromium python3 man-db bash-completion lmod)
  pkgs+=(python3-venv xz-utils)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v cargo >/dev/null && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  missing+=(curl ca-certificates)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Open MPI is the MPI colltune builds against and runs under.
if [ -e /usr/bin/mpicc.openmpi ]; then
  $SUDO update-alternatives --set mpi /usr/bin/mpicc.openmpi >/dev/null 2>&1 || true
  $SUDO update-alternatives --set mpirun /usr/bin/mpirun.openmpi >/dev/null 2>&1 || true
fi

if ! command -v cargo >/dev/null; then
  if [ ! -x "$HOME/.cargo/bin/cargo" ]; then
    echo "install-deps: installing Rust with rustup"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  fi
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi

# colltune needs Rust 1.82 or newer.
ver=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n1.82.0\n' "$ver" | sort -V | head -1)" != "1.82.0" ]; then
  if command -v rustup >/dev/null; then
    rustup update stable
  else
    echo "install-deps: rustc $ver is older than 1.82; install a newer Rust (https://rustup.rs)" >&2
    exit 1
  fi
fi

# The test suite lints with clippy (a minimal rustup profile lacks it).
if [ "${1:-}" = "--test" ] && ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null; then
    rustup component add clippy
  else
    echo "install-deps: the test suite needs cargo clippy; install it with your Rust" >&2
    exit 1
  fi
fi

# The conformance leg's sources (cached: a second run fetches nothing).
# Where a registry cannot be reached the leg says SKIPPED (conformance),
# which fails where COLLTUNE_REQUIRE names it (CI).
if [ "${1:-}" = "--test" ]; then
  "$(dirname "$0")/conformance-sources.sh" > /dev/null ||
    echo "install-deps: the conformance sources could not be fetched (above): jobs/conformance-ci.sh will skip" >&2
fi
