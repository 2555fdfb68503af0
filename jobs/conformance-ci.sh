#!/usr/bin/env bash
# CI's conformance leg: a small fixed subset of jobs/conformance.sh, the
# suites' nonblocking, persistent and intercommunicator broadcasts, plain
# against preloaded, on one MPI library:
#   jobs/conformance-ci.sh [NAME]    NAME: openmpi4 (default), mpich4, ...
#
#   MPICH's tests (test/mpi/coll of Debian's source package), at 4 ranks:
#     nonblocking, nonblocking2 (every nonblocking collective, MPI_Ibcast
#     among them), p_bcast and p_bcast2 (MPI_Bcast_init; Open MPI 4.1's
#     MPIX_Bcast_init), icbcast and its nonblocking twin (intercommunicator
#     broadcasts, MPI_ROOT / MPI_PROC_NULL); nonblocking3 (random
#     nonblocking collectives on 4 communicators at once) at 2 ranks: at 4
#     on 2 cores MPICH's polling ranks take over 120 s, plain;
#   mpi4py's Ibcast and Bcast_init tests (test_cco_nb_buf, test_cco_pr_buf:
#     testBcast*, of its PyPI sdist) at 2 and 3 ranks;
#   settings: plain; preloaded with a table whose ibcast and bcast_init
#     rules force the library's own nonblocking algorithms (nb-rules);
#     preloaded with COLLTUNE_BCAST=shm.
#
# Fails (exit 1) when a preloaded setting passes another number of runs or
# tests than plain, when plain fails one, when a test is not built, or when
# the preloaded logs do not show the drop-in at work: the loader refused the
# preload library, or under nb-rules a run on an intracommunicator traced
# no decision (COLLTUNE_TRACE), or MPI_Ibcast and MPI_Bcast_init did not
# run the rules' algorithm. (With shm forced these programs' broadcasts are
# all the library's: nonblocking and persistent calls without rules, and
# intercommunicators, are handed to it untraced; the setting checks that
# the drop-in's hand-off changes no result.) Where the sources cannot be had
# (no apt source package, no PyPI: jobs/conformance-sources.sh), it says
# "SKIPPED (conformance): why" and passes, unless COLLTUNE_REQUIRE names
# `conformance` (or `all`): CI's jobs/test.sh does.
# Logs: target/conformance-ci/NAME/logs. About a minute per library on 2
# cores once the sources are cached. Then a self-check, that the leg can
# fail: nonblocking2 at 4 ranks with a broken drop-in preloaded before
# colltune's (tests/c/corrupt_ibcast.c flips a byte of MPI_Ibcast's root
# buffer) must make jobs/conformance.sh --check fail, naming nb-rules.
set -uo pipefail
cd "$(dirname "$0")/.."
name=${1:-${COLLTUNE_MPI:-openmpi4}}
start=$(date +%s)

fail() {
  echo "conformance-ci ($name): FAILED: $*" >&2
  exit 1
}
skip() {
  local required=${COLLTUNE_REQUIRE:-}
  if [[ ",${required// /}," == *",conformance,"* || ",${required// /}," == *",all,"* ]]; then
    fail "\`conformance\` is required here (COLLTUNE_REQUIRE=$required) but cannot run: $*"
  fi
  echo "SKIPPED (conformance): $*"
  exit 0
}

# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name" || skip "$name is not installed (above)"
if ! why=$(jobs/conformance-sources.sh 2>&1 >/dev/null); then
  sed 's/^/  /' <<<"$why"
  skip "the suites' sources cannot be had from the registries (above; jobs/conformance-sources.sh, which jobs/install-deps.sh --test runs)"
fi

work=$PWD/target/conformance-ci/$name
rm -rf "$work/logs"
mkdir -p "$work"
export CONFORMANCE_WORK=$work
export CONFORMANCE_SETTINGS="plain nb-rules shm"
export CONFORMANCE_MPICH_RUNS="nonblocking 4;nonblocking2 4;nonblocking3 2;p_bcast 4;p_bcast2 4;icbcast 4;icbcast 4 -nonblocking"
export CONFORMANCE_MPI4PY_NP="2 3"
export CONFORMANCE_MPI4PY_SELECT="-i test_cco_(nb|pr)_buf -k testBcast"
export CONFORMANCE_TRACE=1
# Each run takes 1-10 s (nonblocking3 on MPICH the longest); a failing
# mpi4py run can leave ranks waiting on the failed one until the limit.
export CONFORMANCE_TIMEOUT=${CONFORMANCE_TIMEOUT:-60} CONFORMANCE_MPI4PY_TIMEOUT=${CONFORMANCE_MPI4PY_TIMEOUT:-60}
# The preload library the test suite built (jobs/test.sh, jobs/test-mpi.sh)
# is used as it is; built here only where it is missing.
[ -f "$CARGO_TARGET_DIR/release/libcolltune_preload.so" ] && export CONFORMANCE_NO_BUILD=1
jobs/conformance.sh --mpi "$name" --sources registries --check >"$work/conformance.out" 2>&1
rc=$?
sed 's/^/  /' "$work/conformance.out"
[ $rc -eq 0 ] || fail "plain and preloaded differ, or plain failed (above; logs in $work/logs)"

# The drop-in at work: every preloaded log traced, and the table's
# nonblocking and persistent rules ran the library algorithm they name.
logs=$work/logs
case "$MPI_FAMILY" in
  openmpi) nb=ompi_libnbc ;;
  *) nb=mpich_ibcast ;;
esac
for log in "$logs"/nb-rules.*.log "$logs"/shm.*.log; do
  [ -f "$log" ] || fail "no preloaded logs in $logs"
  ! grep -q "cannot be preloaded" "$log" || fail "the loader did not preload the drop-in: $(grep -m1 "cannot be preloaded" "$log")"
done
# mpi4py 4 calls MPI 4's large-count entries (MPI_Bcast_c, MPI_Ibcast_c,
# MPI_Bcast_init_c) where the library has them (MPICH 4; Open MPI 4.1 has
# none): the drop-in defines them too, so their traces are required like
# every other's.
for log in "$logs"/nb-rules.*.log; do
  # (icbcast: blocking broadcasts on an intercommunicator, the library's)
  [[ "$log" == */nb-rules.icbcast.* ]] && continue
  grep -q "colltune trace:" "$log" || fail "the drop-in traced nothing in $log: was it preloaded?"
done
for call in ibcast bcast_init; do
  grep -h "colltune trace: .* $call [0-9]* B root [0-9]*: $nb:" "$logs"/nb-rules.*.log > /dev/null ||
    fail "no $call under nb-rules ran the table's $nb rule (traces in $logs/nb-rules.*.log)"
done
echo "conformance-ci ($name): plain and preloaded (nb-rules, shm) alike; MPI_Ibcast and MPI_Bcast_init ran the table's $nb rules ($(($(date +%s) - start)) s)"

# The self-check: a drop-in that corrupts one byte must fail the check.
preload=$CARGO_TARGET_DIR/release/libcolltune_preload.so
self=$work/selfcheck
mkdir -p "$self"
"$MPICC" -shared -fPIC -o "$self/corrupt_ibcast.so" tests/c/corrupt_ibcast.c -ldl || fail "cannot build tests/c/corrupt_ibcast.c"
CONFORMANCE_WORK=$self CONFORMANCE_SETTINGS="plain nb-rules" CONFORMANCE_MPICH_RUNS="nonblocking2 4" SKIP_MPI4PY=1 \
  CONFORMANCE_PRELOAD="$self/corrupt_ibcast.so:$PWD/$preload" CONFORMANCE_NO_BUILD=1 \
  jobs/conformance.sh --mpi "$name" --sources registries --check >"$self/out" 2>&1
rc=$?
grep -q "conformance: FAILED: MPICH: nb-rules passed 0 of 1, plain 1" "$self/out" && [ $rc -eq 1 ] ||
  { sed 's/^/  /' "$self/out"; fail "the self-check: a drop-in that corrupts a byte of MPI_Ibcast did not fail the check (rc=$rc, above)"; }
echo "conformance-ci ($name): self-check: a byte corrupted in MPI_Ibcast fails the check ($(grep -m1 "FAILED" "$self/out")); $(($(date +%s) - start)) s in all"
