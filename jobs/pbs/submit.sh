#!/bin/bash
# Submits one PBS tuning job per node count. Usage: jobs/pbs/submit.sh [counts...]
# Environment: TASKS_PER_NODE (default 4), WALLTIME (default 01:00:00),
# SYNTAX=pro|torque (default pro: select=N:ncpus=K:mpiprocs=K).
set -euo pipefail
cd "$(dirname "$0")/../.."
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(1 2 4)
k=${TASKS_PER_NODE:-4}
for n in "${counts[@]}"; do
  if [ "${SYNTAX:-pro}" = torque ]; then res="nodes=$n:ppn=$k"; else res="select=$n:ncpus=$k:mpiprocs=$k"; fi
  qsub -l "$res" -l walltime="${WALLTIME:-01:00:00}" -N "colltune-N$n" jobs/pbs/tune.pbs
done
