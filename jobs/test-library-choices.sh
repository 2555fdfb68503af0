#!/usr/bin/env bash
# The library's own algorithms as table choices, end to end, on one MPI
# library (step 8 of jobs/test-mpi.sh; runnable alone once built):
#   jobs/test-library-choices.sh NAME     NAME: openmpi5 mpich4 mpich5 (openmpi4: fallback only)
#   1. a table whose rules name this library's algorithms (Open MPI 5.0:
#      `ompi_adapt`; MPICH: `mpich`) drives the drop-in
#      (tests/c/plain_bcast.c: every byte of broadcasts of 0 B to 1 MiB + 3
#      from every root, world and split communicator) and the Rust selector
#      (examples/select_check) at 3 and 4 ranks: every byte right, the
#      trace shows the forced choice, no warning;
#   2. a table naming the other library's algorithms (an `mpich` table on
#      Open MPI, an `ompi_adapt` one on MPICH) falls back to the library's
#      default: one warning per algorithm and communicator leader, never per
#      call, every byte right;
#   3. a short `tune` at 4 ranks measures the library's algorithms as
#      candidates beside colltune's (the CSV has them), and its table
#      validates; whether the table chose one is said.
# Exit 1 at the first failure, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: jobs/test-library-choices.sh openmpi5|mpich4|mpich5|openmpi4}
if [ -z "${COLLTUNE_NO_BUILD:-}" ]; then
  jobs/build.sh --mpi "$name" -p colltune -p colltune-preload
  jobs/build.sh --mpi "$name" --example select_check
fi
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name"
bin=$CARGO_TARGET_DIR/release/colltune
preload=$PWD/$CARGO_TARGET_DIR/release/libcolltune_preload.so
rust=$CARGO_TARGET_DIR/release/examples/select_check
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
start=$(date +%s)
fail() {
  echo "test-library-choices ($name): FAILED: $*" >&2
  exit 1
}
launch() {
  local n=$1
  shift
  timeout "${TEST_TIMEOUT_S:-600}" "$MPI_LAUNCHER" -n "$n" "${MPI_FLAGS[@]}" "$@"
}

# A table for 1-4 ranks on one node; $1: the rules of 3 and 4 ranks.
table() {
  local rules=$1 out=$2
  {
    printf 'schema: 1\nprovenance:\n  host: test\n  mpi: any\n  date: 2026-12-01T00:00:00Z\n  command: jobs/test-library-choices.sh\n  colltune: 0.1.0\n  source: measured\n  sweep:\n    mode: built\nbcast:\n'
    for n in 1 2 3 4; do
      printf -- '- ranks: %d\n  ppn: %d\n  nodes: 1\n  rules:\n' "$n" "$n"
      if [ "$n" -ge 3 ]; then printf '%s' "$rules"; else
        printf '  - min_bytes: 0\n    algorithm: binomial\n    execution: blocking\n'
      fi
    done
  } > "$out"
  "$bin" validate "$out" > /dev/null || fail "the test's own table $out does not validate"
}
rule() { # min max algorithm params...
  local min=$1 max=$2 algo=$3
  shift 3
  printf '  - min_bytes: %s\n' "$min"
  [ "$max" = - ] || printf '    max_bytes: %s\n' "$max"
  printf '    algorithm: %s\n    params:\n' "$algo"
  for p in "$@"; do printf '      %s\n' "$p"; done
  printf '    execution: library\n'
}
# a coll/tuned rule among them: on Open MPI the drop-in hands it to Open
# MPI's rules file (adapt's ranges written there as algorithm 0 and left to
# colltune's duplicates)
adapt_rules=$(rule 0 1023 ompi_adapt "algorithm: binomial" "segment: 0"
  rule 1024 4095 ompi_tuned "algorithm: knomial" "segment: 0"
  rule 4096 65535 ompi_adapt "algorithm: pipeline" "segment: 8192"
  rule 65536 - ompi_adapt "algorithm: in_order_binomial" "segment: 65536")
mpich_rules=$(rule 0 1023 mpich "algorithm: binomial"
  rule 1024 65535 mpich "algorithm: nb"
  rule 65536 - mpich "algorithm: scatter_ring_allgather")
table "$adapt_rules"$'\n' "$scratch/adapt.yaml"
table "$mpich_rules"$'\n' "$scratch/mpich.yaml"
ompi_version=""
if [ "$MPI_FAMILY" = openmpi ]; then
  ompi_version=$("$bin" --version | sed -n 's/^MPI: runs on //p')
fi
case "$MPI_FAMILY:$ompi_version" in
  openmpi:*v4.*) own=""; other=adapt ;; # 4.1: adapt's variables are read-only
  openmpi:*) own=adapt; other=mpich ;;
  mpich:*) own=mpich; other=adapt ;;
  *) echo "test-library-choices ($name): nothing to test on $MPI_FAMILY"; exit 0 ;;
esac

"$MPICC" -O2 -o "$scratch/plain_bcast" tests/c/plain_bcast.c
sizes=(0 1 7 1023 1024 65535 65536 65537 1048579)
dropin() { # ranks table out
  launch "$1" env LD_PRELOAD="$preload" COLLTUNE_TABLE="$2" COLLTUNE_TRACE=all \
    timeout 300 "$scratch/plain_bcast" "${sizes[@]}" > "$3" 2>&1 || { tail -20 "$3" >&2; return 1; }
  grep -q "plain_bcast: all bytes correct" "$3" || { tail -20 "$3" >&2; return 1; }
}
rust_api() { # ranks table out
  # a program of its own calls MPI_Init: Open MPI's dynamic rules, which
  # forcing coll/tuned needs, are its to set (the drop-in sets them)
  launch "$1" env COLLTUNE_TABLE="$2" OMPI_MCA_coll_tuned_use_dynamic_rules=1 "$rust" "${sizes[@]}" > "$3" 2>&1 || { tail -20 "$3" >&2; return 1; }
  grep -q "rust API: all bytes correct" "$3" || { tail -20 "$3" >&2; return 1; }
}

# 1. This library's own algorithms, forced.
if [ -n "$own" ]; then
  if [ "$own" = adapt ]; then
    want=("ompi_adapt:algorithm=1,name=binomial,segment=0 \[library\]"
      "ompi_adapt:algorithm=4,name=pipeline,segment=8192 \[library\]"
      "ompi_adapt:algorithm=2,name=in_order_binomial,segment=65536 \[library\]")
  else
    want=("mpich:algorithm=binomial \[library\]" "mpich:algorithm=nb \[library\]"
      "mpich:algorithm=scatter_ring_allgather \[library\]")
  fi
  for n in 3 4; do
    t0=$(date +%s)
    out=$scratch/own-$n
    dropin "$n" "$scratch/$own.yaml" "$out" || fail "drop-in with $own rules at $n ranks"
    if grep -q "cannot force\|forcing is unavailable" "$out"; then
      grep "cannot force\|unavailable" "$out" | head -3 >&2
      fail "drop-in with $own rules at $n ranks: forcing fell back"
    fi
    for w in "${want[@]}"; do
      grep -q "colltune trace: .*$w" "$out" || { grep "colltune trace" "$out" | head -5 >&2; fail "drop-in at $n ranks: the trace never shows $w"; }
    done
    if [ "$own" = adapt ]; then
      # the coll/tuned rule handed off; adapt's sizes on adapt's duplicate
      # (not `grep | grep -q`: under pipefail, -q stopping at the first match
      # can kill the first grep with SIGPIPE and fail, or negated pass, the check)
      grep "colltune trace: .* bcast 1024 B" "$out" | grep "handed it at MPI_Init" > /dev/null \
        || { grep "colltune trace: .* bcast 1024 B" "$out" | head -3 >&2; fail "drop-in at $n ranks: the coll/tuned rule was not handed off"; }
      ! grep "colltune trace: .* bcast 65535 B" "$out" | grep "handed it at MPI_Init" > /dev/null \
        || fail "drop-in at $n ranks: an adapt rule's size went to Open MPI's rules file"
    fi
    calls=$(grep -c "colltune trace: .* bcast .*\[library\]" "$out" || true)
    rust_api "$n" "$scratch/$own.yaml" "$scratch/rust-$n" || fail "Rust selector with $own rules at $n ranks"
    for w in "${want[@]}"; do
      grep -q "ran: $w" "$scratch/rust-$n" || { cat "$scratch/rust-$n" >&2; fail "Rust selector at $n ranks: $w never ran"; }
    done
    ! grep "cannot force" "$scratch/rust-$n" >&2 || fail "Rust selector at $n ranks: forcing fell back"
    echo "test-library-choices ($name): $own rules at $n ranks: drop-in and Rust selector, all bytes correct, forced ($calls traced calls) in $(( $(date +%s) - t0 )) s"
  done
fi

# 2. The other library's algorithms: the library's default, one warning.
for n in 3 4; do
  t0=$(date +%s)
  out=$scratch/other-$n
  dropin "$n" "$scratch/$other.yaml" "$out" || fail "drop-in with $other rules at $n ranks (fallback)"
  [ "$other" = adapt ] && what="Open MPI's coll/adapt" || what="MPICH's"
  warnings=$(grep -c "warning: cannot force $what" "$out" || true)
  algos=3
  # one per algorithm and communicator leader (world rank 0; rank 1 leads the
  # split's other half at 3 and 4 ranks): never one per call
  { [ "$warnings" -ge "$algos" ] && [ "$warnings" -le $((2 * algos)) ]; } \
    || { grep "warning" "$out" | head -8 >&2; fail "fallback at $n ranks: $warnings warnings for $algos algorithms"; }
  grep -q "forcing is unavailable here: the MPI library's default" "$out" || fail "fallback at $n ranks: the trace does not say it fell back"
  rust_api "$n" "$scratch/$other.yaml" "$scratch/rust-other-$n" || fail "Rust selector with $other rules at $n ranks (fallback)"
  rw=$(grep -c "warning: cannot force $what" "$scratch/rust-other-$n" || true)
  [ "$rw" -eq "$algos" ] || { cat "$scratch/rust-other-$n" >&2; fail "Rust selector fallback at $n ranks: $rw warnings for $algos algorithms"; }
  echo "test-library-choices ($name): $other rules at $n ranks: fell back, $warnings warnings (drop-in), $rw (Rust), all bytes correct in $(( $(date +%s) - t0 )) s"
done

# 3. tune measures them as candidates.
if [ -n "$own" ]; then
  t0=$(date +%s)
  launch 4 "$bin" tune --budget-ms 1 --min-reps 2 --max-reps 5 --sizes 8,64K,1M --collective bcast \
    --executions blocking --screen-runs 1 --full-runs 1 \
    --csv "$scratch/tune.csv" --table "$scratch/tune.yaml" > "$scratch/tune" 2>&1 \
    || { tail -30 "$scratch/tune" >&2; fail "tune at 4 ranks"; }
  family=$([ "$own" = adapt ] && echo ompi_adapt || echo mpich)
  measured=$(grep -c ",$family," "$scratch/tune.csv" || true)
  kinds=$(grep -o "$family:[^,]*\(,name=[a-z_]*,segment=[0-9]*\)\?" "$scratch/tune.csv" | sort -u | wc -l)
  [ "$measured" -gt 0 ] || { head -5 "$scratch/tune.csv" >&2; tail -20 "$scratch/tune" >&2; fail "tune measured no $family candidate"; }
  "$bin" validate "$scratch/tune.yaml" > /dev/null || fail "tune's table does not validate"
  chosen=$(grep -c "algorithm: $family" "$scratch/tune.yaml" || true)
  echo "test-library-choices ($name): tune at 4 ranks measured $kinds $family candidates ($measured samples); its table has $chosen $family rule(s); in $(( $(date +%s) - t0 )) s"
fi
echo "test-library-choices ($name): passed in $(( $(date +%s) - start )) s"
