#!/usr/bin/env bash
# A real Slurm on this machine: a one-node controller and daemon on
# localhost (munge authentication), then the tuning job submitted with
# sbatch twice: the first tunes and writes the table; the second resumes the
# same CSV and measures nothing again. Shows the table; stops the daemons it
# started. Root needed. Exit 77 (skipped) when Slurm cannot run here.
#
# The node claims 8 CPUs (config_overrides) so that a 4-rank job fits on a
# small machine; the job pins and oversubscribes as the local job does.
# Environment: KEEP=1 leaves the daemons running; OUT (default
# /tmp/colltune-slurm-test).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
STATE=/run/colltune-slurm
OUT=${OUT:-/tmp/colltune-slurm-test}
skip() { echo "SKIPPED: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "not root"
for b in slurmctld slurmd sbatch squeue sinfo munged; do
  command -v "$b" >/dev/null || skip "$b not installed (apt-get install slurm-wlm munge)"
done
[ -x target/release/colltune ] || { echo "build first: cargo build --release --locked" >&2; exit 2; }

started_munge=0
if ! pgrep -x munged >/dev/null; then
  [ -s /etc/munge/munge.key ] || { mkdir -p /etc/munge; dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- munged || skip "munged does not start"
  started_munge=1
fi

host=$(hostname -s)
rm -rf "$STATE"; mkdir -p "$STATE/state" "$STATE/spool"
conf=$STATE/slurm.conf
cat > "$conf" <<CONF
ClusterName=colltune-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=$host CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF=$conf

cleanup() {
  if [ "${KEEP:-0}" != 1 ]; then
    for p in slurmd slurmctld; do
      [ -s "$STATE/$p.pid" ] && kill "$(cat "$STATE/$p.pid")" 2>/dev/null
    done
    sleep 1
    [ $started_munge = 1 ] && pkill -x munged
    rm -rf "$STATE"
  fi
}
trap cleanup EXIT

slurmctld -f "$conf" || skip "slurmctld does not start (see $STATE/slurmctld.log)"
slurmd -f "$conf" || skip "slurmd does not start (see $STATE/slurmd.log)"
for _ in $(seq 60); do
  sinfo -h -o %t 2>/dev/null | grep -qE "idle|mix" && break
  sleep 1
done
sinfo -h -o %t | grep -qE "idle|mix" || skip "the Slurm node never became idle: $(sinfo 2>&1 | tail -1)"
sinfo

rm -rf "$OUT"; mkdir -p "$OUT"
# One launch per job: the further launches at open sizes are tested in
# tests/scripts.rs; here the job, its table and its resume are the point.
export COLLTUNE=$ROOT/target/release/colltune OUT CLUSTER=colltune-local TABLE=$OUT/colltune-local.yaml BUDGET=6 LAUNCHES=1
export LAUNCHER="mpirun --map-by core --bind-to core:overload-allowed --mca mpi_yield_when_idle 1 --mca btl_vader_single_copy_mechanism none"
export TUNE_ARGS="--collective bcast --sizes 1,4K,64K --budget-ms 5 --min-reps 3 --max-reps 30 --screen-runs 1 --full-runs 1 --extra-rounds 0"

submit() {
  local id
  id=$(sbatch --parsable --nodes=1 --ntasks-per-node=4 --time=10 --output="$OUT/job-%j.out" jobs/slurm/tune.sbatch) || return 1
  echo "submitted job $id" >&2
  for _ in $(seq 900); do
    squeue -h -j "$id" 2>/dev/null | grep -q . || break
    sleep 1
  done
  echo "$id"
}

id1=$(submit) || { echo "sbatch failed" >&2; exit 1; }
cat "$OUT/job-$id1.out"
[ -s "$TABLE" ] || { echo "FAILED: the job wrote no table" >&2; exit 1; }
id2=$(submit) || { echo "sbatch failed" >&2; exit 1; }
cat "$OUT/job-$id2.out"
grep -q "0 points measured" "$OUT/job-$id2.out" || { echo "FAILED: the second job measured again" >&2; exit 1; }
echo "== the table the Slurm job produced ($TABLE)"
"$COLLTUNE" show "$TABLE"
echo "slurm local test: ok"
