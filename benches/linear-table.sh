#!/usr/bin/env bash
# Prints a table whose one rule, for N ranks on one node, gives every size
# to Open MPI's linear broadcast (coll/tuned algorithm 1): the drop-in hands
# it to Open MPI's rules file at MPI_Init (the handoff), so every call takes
# the one-line shortcut. Used by benches/callpath.sh and benches/callcost.sh.
# Usage: benches/linear-table.sh N [host=bench]
set -euo pipefail
N=$1; HOST=${2:-bench}
cat <<YAML
schema: 1
provenance: {host: $HOST, mpi: Open MPI, date: now, command: benches/linear-table.sh, colltune: 0.1.0, source: hand-written, sweep: {mode: hand-written}}
bcast:
- ranks: $N
  ppn: $N
  nodes: 1
  rules:
  - {min_bytes: 0, algorithm: ompi_tuned, params: {algorithm: 1}, execution: library}
YAML
