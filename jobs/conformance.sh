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
# Usage: jobs/conformance.sh [--mpi NAME] [--sources registries] [--check] [MPICH_SOURCE]
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
#   --sources registries: the sources from package registries instead of
#   GitHub (jobs/conformance-sources.sh, cached in ~/.cache/colltune/
#   conformance): MPICH's test/mpi from Debian's source package of the
#   installed MPICH (4.0.2 on Debian 12: its nonblocking intercommunicator
#   broadcast is the program nbicbcast, icbcast.c compiled with
#   -DUSE_MTEST_NBC, where later MPICH runs icbcast -nonblocking; either
#   spelling is run as the source has it), mpi4py's test/ from its PyPI
#   sdist and a virtual environment with that version
#   (CONFORMANCE_MPI4PY_VERSION, default 4.1.2).
#   --check: exit 1 when a setting passes another number of runs or tests
#   than plain, when plain fails one, when a named MPICH test is not built,
#   or when a part cannot run (jobs/conformance-ci.sh, CI's leg, uses it).
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
#   CONFORMANCE_MPICH_RUNS the MPICH runs, `;`-separated, each "PROGRAM NP
#                         [ARGS...]" (default: every run listed in mpich()
#                         below); only their programs are built
#   CONFORMANCE_MPI4PY_NP rank counts for mpi4py (default "2 3")
#   CONFORMANCE_MPI4PY_SELECT  mpi4py runner arguments choosing the tests
#                         (default "-i test_cco": every collective test
#                         module; e.g. "-i test_cco_(nb|pr)_buf -k testBcast")
#   CONFORMANCE_MPI4PY_TIMEOUT seconds per mpi4py run (default 240; a run
#                         takes about 20 s plain at 3 ranks on 2 cores)
#   MPI4PY_SOURCE         an mpi4py checkout whose test/ matches the
#                         installed version (default: cloned from GitHub at
#                         the installed version's tag)
#   CONFORMANCE_TRACE=1   the preloaded settings trace every decision
#                         (COLLTUNE_TRACE=1) into the logs
#   CONFORMANCE_PRELOAD   LD_PRELOAD of the preloaded settings (default: the
#                         built preload library; colon-separated, e.g. a
#                         broken library before it, tests/c/corrupt_ibcast.c,
#                         to see --check fail)
#   CONFORMANCE_NO_BUILD=1 use the built preload library as it is (no
#                         jobs/build.sh; it must exist)
#   SKIP_MPICH=1, SKIP_MPI4PY=1
#
# Not part of `cargo test` (all of it takes tens of minutes on 2 cores and
# needs network access for pip and git). CI runs a small fixed subset,
# plain against preloaded with --check: jobs/conformance-ci.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

MPI=${COLLTUNE_MPI:-openmpi4}
MPICH_SRC=""
SOURCES=github
CHECK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --mpi) MPI=${2:?--mpi needs a name}; shift 2 ;;
    --mpi=*) MPI=${1#--mpi=}; shift ;;
    --sources) SOURCES=${2:?--sources needs registries or github}; shift 2 ;;
    --sources=*) SOURCES=${1#--sources=}; shift ;;
    --check) CHECK=1; shift ;;
    -*) echo "conformance: unknown option $1 (usage at the top of jobs/conformance.sh)" >&2; exit 2 ;;
    *) MPICH_SRC=$1; shift ;;
  esac
done
case "$SOURCES" in
  github) ;;
  registries)
    # KEY=PATH lines: MPICH_SOURCE, MPI4PY_SOURCE, CONFORMANCE_VENV (an
    # MPICH checkout given as well, or MPI4PY_SOURCE set, wins).
    want=all
    [ "${SKIP_MPICH:-0}" = 1 ] && want=mpi4py
    [ "${SKIP_MPI4PY:-0}" = 1 ] && want=mpich
    found=$(jobs/conformance-sources.sh "$want") || { echo "conformance: the sources from the registries are not at hand (above)" >&2; exit 1; }
    while IFS='=' read -r key value; do
      case "$key" in
        MPICH_SOURCE) MPICH_SRC=${MPICH_SRC:-$value} ;;
        MPI4PY_SOURCE) MPI4PY_SOURCE=${MPI4PY_SOURCE:-$value} ;;
        CONFORMANCE_VENV) CONFORMANCE_VENV=${CONFORMANCE_VENV:-$value} ;;
      esac
    done <<<"$found"
    ;;
  *) echo "conformance: --sources is registries or github, not \`$SOURCES\`" >&2; exit 2 ;;
esac
# What --check fails on, one line each.
PROBLEMS=()
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
if [ "${CONFORMANCE_NO_BUILD:-0}" = 1 ]; then
  [ -f "$PRELOAD" ] || { echo "conformance: CONFORMANCE_NO_BUILD=1 but $PRELOAD is not built (jobs/build.sh --mpi $MPI)" >&2; exit 1; }
else
  jobs/build.sh --mpi "$MPI" >&2 || exit 1
fi
TABLE=$ROOT/tuning-tables/vm-2core.yaml
# What the preloaded settings preload (colon-separated: a launcher's
# words are split on blanks).
PRELOAD=${CONFORMANCE_PRELOAD:-$PRELOAD}
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
# CONFORMANCE_TRACE=1: every preloaded rank traces its decisions
# (COLLTUNE_TRACE), so a log shows that the drop-in ran and what it chose.
if [ "${CONFORMANCE_TRACE:-0}" = 1 ]; then
  for s in "${!SET[@]}"; do
    [ -n "${SET[$s]}" ] && SET[$s]+=" COLLTUNE_TRACE=1"
  done
fi
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
# mpich_runs: sets RUNS to the MPICH runs, "PROGRAM NP [ARGS...]" each:
# CONFORMANCE_MPICH_RUNS, or those of coll/testlist.in and of
# maint/dtp-test-config.txt (the DTPools tests: types MPI_INT and
# MPI_INT:4+MPI_DOUBLE:8, counts 1 and 512; the 262144-element runs take
# minutes each and are left out). Run in the copied test directory.
mpich_runs() {
  RUNS=()
  if [ -n "${CONFORMANCE_MPICH_RUNS:-}" ]; then
    IFS=';' read -ra RUNS <<<"$CONFORMANCE_MPICH_RUNS"
  else
    local np
    for np in 4 8 10; do RUNS+=("bcasttest $np"); done
    for np in 1 4 5 10; do RUNS+=("bcastzerotype $np"); done
    RUNS+=("icbcast 4" "icbcast 10" "icbcast 8 -nonblocking" "p_bcast 4" "p_bcast2 8")
    for np in 4 5 10; do RUNS+=("nonblocking $np"); done
    for np in 1 4 5 10; do RUNS+=("nonblocking2 $np" "nonblocking3 $np"); done
    local seed=1 prog type cs
    for prog in bcast:4 bcast_comm_world_only:10; do
      for type in MPI_INT MPI_INT:4+MPI_DOUBLE:8; do
        for cs in 1:1024 512:16; do
          RUNS+=("${prog%%:*} ${prog##*:} -type=$type -count=${cs%%:*} -seed=$seed -testsize=${cs##*:}")
          seed=$((seed + 1))
        done
      done
    done
  fi
  # MPICH before 4.1 (Debian 12's 4.0.2) makes the nonblocking
  # intercommunicator broadcast at build time, nbicbcast: icbcast.c with
  # -DUSE_MTEST_NBC; later ones read the argument -nonblocking.
  if ! grep -q '"nonblocking"' coll/icbcast.c; then
    local i words
    for i in "${!RUNS[@]}"; do
      read -ra words <<<"${RUNS[$i]}"
      if [ "${words[0]}" = icbcast ] && [[ " ${words[*]:2} " == *" -nonblocking "* ]]; then
        local rest=" ${words[*]:2} "
        rest=${rest/ -nonblocking / }
        RUNS[i]="nbicbcast ${words[1]}${rest% }"
      fi
    done
  fi
}

# mpich_build PROGRAM...: MPICH's test harness (util/mtest*.c, dtpools
# where bcast.c is asked for) and the programs; sets BUILT to those built.
# Run in the copied test directory.
mpich_build() {
  BUILT=()
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
  # MPICH before 4.1 declares nonblocking2's and nonblocking3's
  # MPI_Ialltoallw datatype arrays `int *`, MPICH's handle type (fixed
  # upstream to MPI_Datatype *): with Open MPI's pointer handles they crash
  # in plain Open MPI. The copy gets upstream's declaration.
  sed -i -E 's/^([[:space:]]*)int \*(send|recv)types/\1MPI_Datatype *\2types/' coll/nonblocking2.c coll/nonblocking3.c
  # Its dtpools calls MPI-1's MPI_Type_hvector and MPI_Type_hindexed,
  # removed in MPI 3.0 (Open MPI 4.1's mpi.h refuses them); upstream calls
  # their MPI-2 names, of the same arguments.
  sed -i -E 's/MPI_Type_(hvector|hindexed)\(/MPI_Type_create_\1(/' dtpools/src/*.c
  local CF=(-O1 -w -Iinclude -Idtpools/include)
  local harness=(util/mtest.c util/mtest_common.c util/dtypes.c util/mtest_single.c) dtp=0 f o
  # (util/run_mpitests.c: the main() of tests written as run(), MPICH 4.1 on)
  [ -f util/run_mpitests.c ] && harness+=(util/run_mpitests.c)
  [[ " $* " == *" bcast "* || " $* " == *" bcast_comm_world_only "* ]] && dtp=1 && harness+=(dtpools/src/*.c)
  for f in "${harness[@]}"; do
    o=$(basename "$f" .c).o
    "$MPICC" "${CF[@]}" -c "$f" -o "$o" || { echo "MPICH: cannot compile $f" >&2; return 1; }
  done
  local lib=(mtest.o mtest_common.o dtypes.o)
  [ $dtp = 1 ] && lib+=(dtpools*.o)
  ar rcs libmtest.a "${lib[@]}"
  local t
  for t in "$@"; do
    local src=coll/$t.c defs=() main=()
    case "$t" in
      bcast_comm_world_only) src=coll/bcast.c defs=(-DBCAST_COMM_WORLD_ONLY) ;;
      nbicbcast) src=coll/icbcast.c defs=(-DUSE_MTEST_NBC) ;;
    esac
    local log=$WORK/logs/build.$t.log
    if [ ! -f "$src" ]; then
      echo "MPICH: $t not built (no $src in this MPICH's tests)"
      continue
    fi
    grep -q '^int run(' "$src" && main=(run_mpitests.o)
    if "$MPICC" "${CF[@]}" "${defs[@]}" -o "$t" "$src" "${main[@]}" mtest_single.o libmtest.a -lpthread -lm >"$log" 2>&1; then
      BUILT+=("$t")
    elif [ "$MPI_FAMILY" = openmpi ] &&
      "$MPICC" "${CF[@]}" "${defs[@]}" -include mpi.h -include mpi-ext.h -DMPI_Bcast_init=MPIX_Bcast_init -o "$t" "$src" "${main[@]}" mtest_single.o libmtest.a -lpthread -lm >>"$log" 2>&1; then
      # Open MPI 4.1: the persistent broadcast is its extension's
      # MPIX_Bcast_init (mpi-ext.h), which the drop-in routes too.
      BUILT+=("$t")
    else
      echo "MPICH: $t not built ($(grep -m1 -o "undefined reference to .*" "$log" || echo "see $log"))"
    fi
  done
}

mpich() {
  local T=$MPICH_SRC/test/mpi
  if [ ! -f "$T/coll/bcast.c" ]; then
    echo "MPICH: $T/coll/bcast.c not found: pass a checkout of https://github.com/pmodels/mpich (or --sources registries)" >&2
    return 1
  fi
  local B=$WORK/mpich
  rm -rf "$B" && mkdir -p "$B" && cp -r "$T/include" "$T/util" "$T/dtpools" "$T/coll" "$B/" || return 1
  cd "$B" || return 1
  mpich_runs
  local progs=() r
  for r in "${RUNS[@]}"; do
    # shellcheck disable=SC2086
    set -- $r
    [[ " ${progs[*]} " == *" $1 "* ]] || progs+=("$1")
  done
  mpich_build "${progs[@]}" || { cd "$ROOT" && return 1; }

  printf '\nMPICH broadcast tests (%s), %d runs; PASS / FAIL / HANG per setting\n' "$T" "${#RUNS[@]}"
  local s
  declare -A pass
  for s in $settings; do pass[$s]=0; done
  local lines=()
  for r in "${RUNS[@]}"; do
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
    if [[ ! " ${BUILT[*]} " == *" $prog "* ]]; then
      lines+=("$line not built")
      PROBLEMS+=("MPICH: $prog not built: its run at $np ranks did not run")
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
  [ "$total" -gt 0 ] || PROBLEMS+=("MPICH: no run ran")
  compare_counts MPICH "$total" pass
  cd "$ROOT" || return 1
}

# compare_counts PART TOTAL ARRAY: --check's rule on one table of counts
# (ARRAY: setting => passed): plain passes all TOTAL, every other setting
# as many as plain.
compare_counts() {
  local part=$1 total=$2 s
  local -n counts=$3
  if [ -n "${counts[plain]+x}" ] && [ "${counts[plain]}" -ne "$total" ]; then
    PROBLEMS+=("$part: plain passed ${counts[plain]} of $total")
  fi
  for s in "${!counts[@]}"; do
    [ "$s" = plain ] && continue
    if [ -n "${counts[plain]+x}" ] && [ "${counts[$s]}" -ne "${counts[plain]}" ]; then
      PROBLEMS+=("$part: $s passed ${counts[$s]} of $total, plain ${counts[plain]}")
    elif [ -z "${counts[plain]+x}" ] && [ "${counts[$s]}" -ne "$total" ]; then
      PROBLEMS+=("$part: $s passed ${counts[$s]} of $total")
    fi
  done
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
  if ! "$V/bin/python" -c 'import mpi4py' 2>/dev/null; then
    "$V/bin/pip" install --quiet mpi4py || { echo "mpi4py: pip install failed" >&2; return 1; }
  fi
  local ver
  ver=$("$V/bin/python" -c 'import mpi4py; print(mpi4py.__version__)') || return 1
  local src=${MPI4PY_SOURCE:-$WORK/mpi4py-$ver}
  if [ ! -d "$src/test" ]; then
    git clone --quiet --depth 1 --branch "$ver" https://github.com/mpi4py/mpi4py "$src" ||
      { echo "mpi4py: no test sources (set MPI4PY_SOURCE to an mpi4py $ver checkout, or --sources registries)" >&2; return 1; }
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
  local select=()
  read -ra select <<<"${CONFORMANCE_MPI4PY_SELECT:--i test_cco}"
  printf '\nmpi4py %s tests (%s/test, runner arguments %s), tests passed (summed over ranks) per setting\n' "$ver" "$src" "${select[*]}"
  local np
  for np in $M4P_NP; do
    local line="  np=$np" s
    declare -A ok=()
    # The first setting (plain, where run) is the reference.
    local ref_ran="" ref_skipped=0
    for s in $settings; do
      local log="$WORK/logs/$s.mpi4py.np$np.log"
      command "$np" "$s" "$M4P_TIMEOUT" "$V/bin/python" runtests.py --no-builddir "${select[@]}"
      local rc=0
      (cd "$src/test" && MPI4PY_MPIABI=$MPI_FAMILY timeout -k 10 $((M4P_TIMEOUT + 30)) "${CMD[@]}") >"$log" 2>&1 || rc=$?
      local ran failed skipped
      ran=$(grep -o 'Ran [0-9]* test' "$log" | awk '{s += $2} END {print s + 0}')
      failed=$(grep -o '\(failures\|errors\)=[0-9]*' "$log" | awk -F= '{s += $2} END {print s + 0}')
      skipped=$(grep -o 'skipped=[0-9]*' "$log" | awk -F= '{s += $2} END {print s + 0}')
      local res="$((ran - failed))/$ran"
      [ "$skipped" -gt 0 ] && res+="($skipped skipped)"
      if timed_out "$log" || [ $rc -eq 124 ]; then
        res+="(HANG)"
      elif [ $rc -ne 0 ]; then
        res+="(rc=$rc)"
      fi
      # A count for --check: the tests that passed and did not skip, none
      # where the launch failed; a setting must also run as many as plain.
      ok[$s]=$((ran - failed - skipped))
      { [ $rc -ne 0 ] || [ "$ran" -eq 0 ]; } && ok[$s]=0
      if [ -z "$ref_ran" ]; then
        ref_ran=$ran ref_skipped=$skipped
      elif [ "$ran" -ne "$ref_ran" ]; then
        PROBLEMS+=("mpi4py np=$np: $s ran $ran tests, ${settings%% *} $ref_ran")
      fi
      line+=" $s:$res"
    done
    echo "$line"
    [ "${ref_ran:-0}" -gt 0 ] || PROBLEMS+=("mpi4py np=$np: no test ran")
    # Plain passes every test that ran and did not skip; the others as many.
    compare_counts "mpi4py np=$np" "$((ref_ran - ref_skipped))" ok
    unset ok
  done
}

echo "conformance: $MPI ($MPI_LAUNCHER), settings: $settings; logs in $WORK/logs"
if [ "${SKIP_MPICH:-0}" != 1 ]; then
  if [ -n "$MPICH_SRC" ]; then
    mpich || { echo "MPICH part failed"; PROBLEMS+=("the MPICH part failed (above)"); }
  else
    echo "MPICH: skipped (no MPICH source given: jobs/conformance.sh PATH_TO_MPICH_CHECKOUT, or --sources registries)"
    PROBLEMS+=("MPICH: no source")
  fi
fi
if [ "${SKIP_MPI4PY:-0}" != 1 ]; then
  mpi4py || { echo "mpi4py part failed"; PROBLEMS+=("the mpi4py part failed (above)"); }
fi
if [ "$CHECK" = 1 ]; then
  if [ ${#PROBLEMS[@]} -gt 0 ]; then
    printf 'conformance: FAILED: %s\n' "${PROBLEMS[@]}" >&2
    exit 1
  fi
  echo "conformance: check passed: every setting passed as many runs and tests as plain, and plain all"
fi
