#!/usr/bin/env bash
# Runs MPI correctness suites colltune did not write, plain and under
# LD_PRELOAD=libcolltune_preload.so, and prints pass counts side by side:
#
#  - MPICH's broadcast tests (test/mpi/coll: bcast.c on DTPools, i.e.
#    derived datatypes that differ between ranks with one signature,
#    bcast_comm_world_only, bcasttest, bcastzerotype, icbcast (blocking and
#    -nonblocking), nonblocking, nonblocking2 and nonblocking3 (every
#    nonblocking collective, MPI_Ibcast among them), and p_bcast
#    and p_bcast2 where the library has MPI_Bcast_init, MPI 4; Open MPI 4.1
#    has not: "not built"), built against the chosen MPI with MPICH's own
#    test harness (util/mtest*.c, dtpools), compiled here without MPICH's
#    configure;
#  - mpi4py's collective tests (test/test_cco*.py) run by mpi4py's own
#    runner, mpi4py installed with pip in a virtual environment (its wheel
#    carries both the Open MPI and the MPICH interface; the chosen library's
#    is named by MPI4PY_MPIABI and found on LD_LIBRARY_PATH).
#
# Settings: plain; preloaded with the shipped table
# (tuning-tables/vm-2core.yaml); preloaded with a measured table whose rules
# name Open MPI's own algorithms (library-rules: the handoff and the
# forced-duplicate route; Open MPI only); preloaded with a table whose
# ibcast and bcast_init rules force the library's nonblocking algorithms
# (nb-rules: coll/libnbc's or MPICH's, by size); preloaded with COLLTUNE_BCAST
# forcing each algorithm family; preloaded without table.
#
# Usage: jobs/conformance.sh [--mpi NAME] [MPICH_SOURCE]
#   NAME: the MPI library (jobs/mpi-env.sh): openmpi4 (the default), mpich4,
#   openmpi5, mpich5, impi, mpich5-abi (the test programs built with
#   mpicc_abi, the standard-ABI preload library). The preload library is
#   that library's build (jobs/build.sh --mpi NAME; built here if missing),
#   the programs are built with its mpicc, run by its launcher with its
#   pinning flags.
#   MPICH_SOURCE: a checkout of https://github.com/pmodels/mpich (only
#   test/mpi is used), e.g.
#     git clone --depth 1 https://github.com/pmodels/mpich /tmp/mpich
#   Without it the MPICH part is skipped (said so in the output).
# Environment:
#   CONFORMANCE_WORK      build and log directory (default
#                         target/conformance, target/conformance/NAME for
#                         another library than openmpi4)
#   CONFORMANCE_TIMEOUT   seconds per run (default 20; every run takes
#                         under 2 s plain on 2 cores with Open MPI); a run
#                         that reaches it counts as a failure ("hang")
#   CONFORMANCE_SETTINGS  names of the settings to run, space-separated
#                         (default: plain table library-rules no-table
#                         linear binomial knomial4 pipeline4k scatter_ag shm,
#                         library-rules on Open MPI only; also chain binary
#                         split_binary scatter_ag_ring, see SET below)
#   CONFORMANCE_MAX_NP    skip MPICH runs with more ranks (default 10)
#   CONFORMANCE_MPI4PY_NP rank counts for mpi4py (default "2 3")
#   CONFORMANCE_MPI4PY_TIMEOUT seconds per mpi4py run (default 240; a run
#                         takes about 20 s plain at 3 ranks on 2 cores)
#   MPI4PY_SOURCE         an mpi4py checkout whose test/ matches the
#                         installed version (default: cloned from GitHub at
#                         the installed version's tag)
#   SKIP_MPICH=1, SKIP_MPI4PY=1
#
# Not part of `cargo test` (it takes tens of minutes on 2 cores and needs
# network access for pip and git).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

MPI=${COLLTUNE_MPI:-openmpi4}
MPICH_SRC=""
while [ $# -gt 0 ]; do
  case "$1" in
    --mpi) MPI=${2:?--mpi needs a name}; shift 2 ;;
    --mpi=*) MPI=${1#--mpi=}; shift ;;
    *) MPICH_SRC=$1; shift ;;
  esac
done
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$MPI" || exit 2
if [ "$MPI" = openmpi4 ]; then
  WORK=${CONFORMANCE_WORK:-$ROOT/target/conformance}
else
  WORK=${CONFORMANCE_WORK:-$ROOT/target/conformance/$MPI}
fi
TIMEOUT=${CONFORMANCE_TIMEOUT:-20}
MAX_NP=${CONFORMANCE_MAX_NP:-10}
M4P_NP=${CONFORMANCE_MPI4PY_NP:-2 3}
M4P_TIMEOUT=${CONFORMANCE_MPI4PY_TIMEOUT:-240}
mkdir -p "$WORK/logs"

PRELOAD=$ROOT/$CARGO_TARGET_DIR/release/libcolltune_preload.so
jobs/build.sh --mpi "$MPI" >&2 || exit 1
TABLE=$ROOT/tuning-tables/vm-2core.yaml
# A measured table whose rules also name Open MPI's own algorithms (its
# default decision and forced coll/tuned ones): the handoff and the
# forced-duplicate route.
LIBTABLE=$ROOT/docs/measurements/2026-12-01-imb/table-imb.yaml

# A table whose ibcast and bcast_init rules force the library's own
# nonblocking algorithms, one below 4 KiB and another above, for 1-16 ranks
# on one node.
NBTABLE=$WORK/nb-rules.yaml
mkdir -p "$WORK"
if [ "$MPI_FAMILY" = openmpi ]; then
  NB_LOW="ompi_libnbc, params: {algorithm: chain}" NB_HIGH="ompi_libnbc, params: {algorithm: binomial}"
else
  NB_LOW="mpich_ibcast, params: {algorithm: sched_binomial}" NB_HIGH="mpich_ibcast, params: {algorithm: tsp_tree}"
fi
{
  echo "schema: 2"
  echo "provenance: {host: conformance, mpi: $MPI, date: now, command: jobs/conformance.sh, colltune: 0.1.0, source: hand-written, sweep: {mode: hand-written}}"
  for section in ibcast bcast_init; do
    echo "$section:"
    for n in $(seq 1 16); do
      echo "- {ranks: $n, ppn: $n, nodes: 1, rules: [{min_bytes: 0, max_bytes: 4095, algorithm: $NB_LOW, execution: library}, {min_bytes: 4096, algorithm: $NB_HIGH, execution: library}]}"
    done
  done
} >"$NBTABLE"

# name => the environment each rank gets (NAME=VALUE words), passed by the
# launcher (Open MPI: -x; hydra, MPICH's and Intel's: -genv).
declare -A SET
SET[plain]=""
SET[table]="LD_PRELOAD=$PRELOAD COLLTUNE_TABLE=$TABLE"
SET[library-rules]="LD_PRELOAD=$PRELOAD COLLTUNE_TABLE=$LIBTABLE"
SET[no-table]="LD_PRELOAD=$PRELOAD"
SET[nb-rules]="LD_PRELOAD=$PRELOAD COLLTUNE_TABLE=$NBTABLE"
SET[linear]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=linear"
SET[binomial]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=binomial"
SET[knomial4]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=knomial:radix=4"
SET[pipeline4k]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=pipeline:segment=4096"
SET[chain]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=chain"
SET[binary]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=binary"
SET[split_binary]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=split_binary"
SET[scatter_ag]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=scatter_allgather"
SET[scatter_ag_ring]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=scatter_allgather_ring"
SET[shm]="LD_PRELOAD=$PRELOAD COLLTUNE_BCAST=shm"
if [ "$MPI_FAMILY" = openmpi ]; then
  default_settings="plain table library-rules nb-rules no-table linear binomial knomial4 pipeline4k scatter_ag shm"
else
  default_settings="plain table nb-rules no-table linear binomial knomial4 pipeline4k scatter_ag shm"
fi
settings=${CONFORMANCE_SETTINGS:-$default_settings}
for s in $settings; do
  [ -n "${SET[$s]+x}" ] || { echo "conformance: unknown setting \`$s\` (CONFORMANCE_SETTINGS): one of ${!SET[*]}" >&2; exit 2; }
done

# The libraries installed by jobs/install-mpi.sh are found on their own
# directory (the test programs and mpi4py have no run path to it).
if [ -n "$MPI_PREFIX" ]; then
  export LD_LIBRARY_PATH=$MPI_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# command NP SETTING LIMIT CMD...: sets CMD to the chosen library's
# launcher, pinned, with the setting's environment and the launcher's own
# time limit of LIMIT seconds.
command() {
  local np=$1 setting=$2 limit=$3
  shift 3
  local env=() kv
  for kv in ${SET[$setting]}; do
    if [ "$MPI_FAMILY" = openmpi ]; then
      env+=(-x "$kv")
    else
      env+=(-genv "${kv%%=*}" "${kv#*=}")
    fi
  done
  if [ "$MPI_FAMILY" = openmpi ]; then
    [ -n "$MPI_PREFIX" ] && env+=(-x LD_LIBRARY_PATH)
    CMD=("$MPI_LAUNCHER" -n "$np" "${MPI_FLAGS[@]}" --timeout "$limit" "${env[@]}" "$@")
  else
    # hydra (MPICH's and Intel's) passes the launcher's environment on.
    CMD=(env MPIEXEC_TIMEOUT="$limit" "$MPI_LAUNCHER" -n "$np" "${MPI_FLAGS[@]}" "${env[@]}" "$@")
  fi
}

# A launcher's own "time limit reached" (Open MPI) or "timeout" (hydra).
timed_out() {
  grep -qi "time limit for job execution has been reached\|APPLICATION TIMED OUT\|timeout" "$1"
}

# run NAME SETTING NP CMD... : one launch under the timeout; prints PASS,
# FAIL or HANG and keeps the log.
run() {
  local name=$1 setting=$2 np=$3
  shift 3
  local log="$WORK/logs/$setting.$name.np$np.log"
  # shellcheck disable=SC2086
  command "$np" "$setting" "$TIMEOUT" "$@"
  timeout -k 10 $((TIMEOUT + 30)) "${CMD[@]}" >"$log" 2>&1
  local rc=$?
  if timed_out "$log" || [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo HANG
  elif [ $rc -eq 0 ] && grep -q "No Errors" "$log"; then
    echo PASS
  else
    echo "FAIL(rc=$rc)"
  fi
}

# ---------------------------------------------------------------- MPICH
mpich() {
  local T=$MPICH_SRC/test/mpi
  if [ ! -f "$T/coll/bcast.c" ]; then
    echo "MPICH: $T/coll/bcast.c not found: pass a checkout of https://github.com/pmodels/mpich" >&2
    return 1
  fi
  local B=$WORK/mpich
  rm -rf "$B" && mkdir -p "$B" && cp -r "$T/include" "$T/util" "$T/dtpools" "$T/coll" "$B/" || return 1
  cd "$B" || return 1
  # What MPICH's configure would find on Linux with Open MPI (MPI 3.1).
  cat >include/mpitestconf.h <<'EOF'
#define HAVE_STDARG_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG_INT 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define MTEST_MPI_VERSION 3
#define MTEST_MPI_SUBVERSION 1
EOF
  : >include/mtest_mpix.h # generated by MPICH's autogen; empty elsewhere
  echo '#define HAVE_STDARG_H 1' >dtpools/dtpoolsconf.h
  local CF=(-O1 -w -Iinclude -Idtpools/include)
  local o
  for f in util/mtest.c util/mtest_common.c util/dtypes.c util/mtest_single.c util/run_mpitests.c dtpools/src/*.c; do
    o=$(basename "$f" .c).o
    "$MPICC" "${CF[@]}" -c "$f" -o "$o" || { echo "MPICH: cannot compile $f" >&2; return 1; }
  done
  ar rcs libmtest.a mtest.o mtest_common.o dtypes.o dtpools*.o
  local built=()
  for t in bcast bcasttest bcastzerotype icbcast nonblocking nonblocking2 nonblocking3 p_bcast p_bcast2; do
    local main=()
    grep -q '^int run(' "coll/$t.c" && main=(run_mpitests.o)
    if "$MPICC" "${CF[@]}" -o "$t" "coll/$t.c" "${main[@]}" mtest_single.o libmtest.a -lpthread -lm >"$WORK/logs/build.$t.log" 2>&1; then
      built+=("$t")
    elif [ "$MPI_FAMILY" = openmpi ] &&
      "$MPICC" "${CF[@]}" -include mpi-ext.h -DMPI_Bcast_init=MPIX_Bcast_init -o "$t" "coll/$t.c" "${main[@]}" mtest_single.o libmtest.a -lpthread -lm >>"$WORK/logs/build.$t.log" 2>&1; then
      # Open MPI 4.1: the persistent broadcast is its extension's
      # MPIX_Bcast_init (mpi-ext.h), which the drop-in routes too.
      built+=("$t")
    else
      echo "MPICH: $t not built ($(grep -m1 -o "undefined reference to .*" "$WORK/logs/build.$t.log" || echo "see $WORK/logs/build.$t.log"))"
    fi
  done
  "$MPICC" "${CF[@]}" -DBCAST_COMM_WORLD_ONLY -o bcast_comm_world_only coll/bcast.c mtest_single.o libmtest.a -lpthread -lm && built+=(bcast_comm_world_only)

  # The runs of coll/testlist.in and of maint/dtp-test-config.txt (the
  # DTPools tests: types MPI_INT and MPI_INT:4+MPI_DOUBLE:8, counts 1 and
  # 512; the 262144-element runs take minutes each and are left out).
  local runs=()
  for np in 4 8 10; do runs+=("bcasttest $np"); done
  for np in 1 4 5 10; do runs+=("bcastzerotype $np"); done
  runs+=("icbcast 4" "icbcast 10" "icbcast 8 -nonblocking" "p_bcast 4" "p_bcast2 8")
  for np in 4 5 10; do runs+=("nonblocking $np"); done
  for np in 1 4 5 10; do runs+=("nonblocking2 $np" "nonblocking3 $np"); done
  local seed=1
  for prog in bcast:4 bcast_comm_world_only:10; do
    for type in MPI_INT MPI_INT:4+MPI_DOUBLE:8; do
      for cs in 1:1024 512:16; do
        runs+=("${prog%%:*} ${prog##*:} -type=$type -count=${cs%%:*} -seed=$seed -testsize=${cs##*:}")
        seed=$((seed + 1))
      done
    done
  done

  printf '\nMPICH broadcast tests (%s), %d runs; PASS / FAIL / HANG per setting\n' "$T" "${#runs[@]}"
  local s
  declare -A pass
  for s in $settings; do pass[$s]=0; done
  local lines=()
  for r in "${runs[@]}"; do
    # shellcheck disable=SC2086
    set -- $r
    local prog=$1 np=$2
    shift 2
    local line
    line=$(printf '%-62s' "$prog np=$np $*")
    if [ "$np" -gt "$MAX_NP" ]; then
      lines+=("$line skipped (CONFORMANCE_MAX_NP=$MAX_NP)")
      continue
    fi
    if [[ ! " ${built[*]} " == *" $prog "* ]]; then
      lines+=("$line not built")
      continue
    fi
    local tag
    tag=$(echo "$prog.$*" | tr -c 'A-Za-z0-9._=-' '_')
    for s in $settings; do
      local res
      res=$(run "$tag" "$s" "$np" "./$prog" "$@")
      [ "$res" = PASS ] && pass[$s]=$((pass[$s] + 1))
      line+=" $s:$res"
    done
    lines+=("$line")
    echo "  ${lines[-1]}"
  done
  local total=0
  # A run that ran has a result per setting; skipped and unbuilt ones none.
  for r in "${lines[@]}"; do [[ "$r" == *" ${settings%% *}:"* ]] && total=$((total + 1)); done
  printf 'MPICH pass counts (of %d runs that ran):' "$total"
  for s in $settings; do printf ' %s=%d' "$s" "${pass[$s]}"; done
  echo
  cd "$ROOT" || return 1
}

# --------------------------------------------------------------- mpi4py
mpi4py() {
  if [ "$MPI_FAMILY" = abi ]; then
    echo "mpi4py: skipped: its wheel carries the Open MPI and the MPICH interfaces, not the MPI standard ABI"
    return 0
  fi
  # One virtual environment for every library: the wheel is the same.
  local V=${CONFORMANCE_VENV:-$ROOT/target/conformance/venv}
  if [ ! -x "$V/bin/python" ]; then
    python3 -m venv "$V" || return 1
  fi
  "$V/bin/pip" install --quiet mpi4py || { echo "mpi4py: pip install failed" >&2; return 1; }
  local ver
  ver=$("$V/bin/python" -c 'import mpi4py; print(mpi4py.__version__)') || return 1
  local src=${MPI4PY_SOURCE:-$WORK/mpi4py-$ver}
  if [ ! -d "$src/test" ]; then
    git clone --quiet --depth 1 --branch "$ver" https://github.com/mpi4py/mpi4py "$src" ||
      { echo "mpi4py: no test sources (set MPI4PY_SOURCE to an mpi4py $ver checkout)" >&2; return 1; }
  fi
  if [ "$MPI_FAMILY" = mpich ] && [ -z "$MPI_PREFIX" ]; then
    # Debian's MPICH names its library libmpich.so.12; mpi4py's MPICH
    # module asks for libmpi.so.12, which MPICH's own installations have.
    local libdir
    libdir=$("$MPICC" -show | grep -o -- '-L[^ ]*' | head -1 | cut -c3-)
    mkdir -p "$WORK/lib"
    ln -sf "${libdir:-/usr/lib/x86_64-linux-gnu}/libmpich.so.12" "$WORK/lib/libmpi.so.12"
    export LD_LIBRARY_PATH=$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  printf '\nmpi4py %s collective tests (%s/test/test_cco*.py, mpi4py'"'"'s runner), tests passed (summed over ranks) per setting\n' "$ver" "$src"
  for np in $M4P_NP; do
    local line="  np=$np"
    for s in $settings; do
      local log="$WORK/logs/$s.mpi4py.np$np.log"
      # shellcheck disable=SC2086
      command "$np" "$s" "$M4P_TIMEOUT" "$V/bin/python" runtests.py --no-builddir -i test_cco
      local rc=0
      (cd "$src/test" && MPI4PY_MPIABI=$MPI_FAMILY timeout -k 10 $((M4P_TIMEOUT + 30)) "${CMD[@]}") >"$log" 2>&1 || rc=$?
      local ran failed
      ran=$(grep -o 'Ran [0-9]* test' "$log" | awk '{s += $2} END {print s + 0}')
      failed=$(grep -o '\(failures\|errors\)=[0-9]*' "$log" | awk -F= '{s += $2} END {print s + 0}')
      local res="$((ran - failed))/$ran"
      if timed_out "$log" || [ $rc -eq 124 ]; then
        res+="(HANG)"
      elif [ $rc -ne 0 ]; then
        res+="(rc=$rc)"
      fi
      line+=" $s:$res"
    done
    echo "$line"
  done
}

echo "conformance: $MPI ($MPI_LAUNCHER), settings: $settings; logs in $WORK/logs"
if [ "${SKIP_MPICH:-0}" != 1 ]; then
  if [ -n "$MPICH_SRC" ]; then
    mpich || echo "MPICH part failed"
  else
    echo "MPICH: skipped (no MPICH source given: jobs/conformance.sh PATH_TO_MPICH_CHECKOUT)"
  fi
fi
if [ "${SKIP_MPI4PY:-0}" != 1 ]; then
  mpi4py || echo "mpi4py part failed"
fi
