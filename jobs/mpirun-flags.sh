# Sourced by the jobs: mpirun options for a single machine.
# More ranks than cores are allowed (--oversubscribe) and pinned to cores, so
# oversubscribed runs are not pure noise; idle ranks yield the core; Open MPI's
# copy-in/copy-out shared memory path is used (its single-copy CMA path was
# about 2x slower for large messages on the 2-core VMs this was measured on).
# Override the whole set with COLLTUNE_MPIRUN_FLAGS.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# shellcheck disable=SC2206
MPIRUN_FLAGS=(${COLLTUNE_MPIRUN_FLAGS:---oversubscribe --map-by core --bind-to core:overload-allowed --mca mpi_yield_when_idle 1 --mca btl_vader_single_copy_mechanism none})
