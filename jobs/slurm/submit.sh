#!/bin/bash
# Submits one tuning job per node count (they may run at once; each writes
# its own CSV, and each rebuilds the combined table when it ends).
# Usage: jobs/slurm/submit.sh [node counts...]   (default: 1 2 4)
# Environment: TASKS_PER_NODE (default 4), TIME (default 01:00:00), plus the
# parameters of tune.sbatch, which sbatch passes on.
set -euo pipefail
cd "$(dirname "$0")/../.."
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(1 2 4)
for n in "${counts[@]}"; do
  sbatch --nodes="$n" --ntasks-per-node="${TASKS_PER_NODE:-4}" --time="${TIME:-01:00:00}" \
         --job-name="colltune-N$n" jobs/slurm/tune.sbatch
done
