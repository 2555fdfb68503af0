#!/usr/bin/env bash
# The whole test suite: installs what is missing, then runs every test
# (MPI-free checker and unit tests, and the mpirun integration tests).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs/install-deps.sh
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# shellcheck disable=SC1091
. jobs/mpirun-flags.sh
start=$(date +%s)
cargo test --release --locked --workspace "$@"
echo "test suite: $(( $(date +%s) - start )) s wall"
