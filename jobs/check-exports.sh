#!/usr/bin/env bash
# Does the MPI library read what `colltune export` writes for it, and run
# what it says?
#   jobs/check-exports.sh NAME [RANKS]
# NAME: openmpi4 | openmpi5 (coll/tuned's classic rules file) | mpich4 |
# mpich5 (MPICH's JSON selection file), built with jobs/build.sh --mpi NAME.
#
# Open MPI: two one-rule tables (basic linear, binomial) at RANKS ranks
# (default 4), each exported with --format openmpi and given to Open MPI as
# its rules file (coll_tuned_use_dynamic_rules=1,
# coll_tuned_dynamic_rules_filename). tests/c/force_tuned.c (nothing forced:
# the library's own decision, ten 1 MiB broadcasts from rank 0, every byte
# checked) runs under the pml monitoring; rank 0's messages must equal those
# of the same algorithm forced by the environment at MPI_Init, as Open MPI
# documents it, and the two algorithms' must differ.
# MPICH: a table of three rules (binomial, scatter-ring-allgather, k-nomial)
# exported with --format mpich (MPICH's own rules for the other collectives
# read from the library itself) and given by
# MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE: tests/c/plain_bcast.c
# broadcasts every size of every rule's range correctly at RANKS and RANKS+1
# ranks; and the same file with its bcast part broken (an algorithm name
# MPICH does not have) makes MPICH fail, so the file is what it reads.
# Intel MPI reads neither (its own tuning files): not checked.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: jobs/check-exports.sh openmpi4|openmpi5|mpich4|mpich5 [ranks]}
ranks=${2:-4}
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name"
bin=$CARGO_TARGET_DIR/release/colltune
[ -x "$bin" ] || { echo "check-exports: $bin is missing: run jobs/build.sh --mpi $name" >&2; exit 2; }
d=$(mktemp -d)
trap "rm -rf $d" EXIT; [ -n "${KEEP:-}" ] && trap - EXIT
say() { echo "check-exports ($name, $ranks ranks): $*"; }
fail() { echo "check-exports ($name, $ranks ranks): $*" >&2; exit 1; }

# table FILE RANKS RULE...: a bcast table, each RULE "min_bytes algorithm".
table() {
  local f=$1 n=$2
  shift 2
  {
    echo "schema: 1"
    printf 'provenance:\n  host: check-exports\n  mpi: %s\n  date: %s\n  command: jobs/check-exports.sh\n  colltune: check\n  source: measured\n  sweep:\n    mode: built\n' \
      "$name" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "bcast:"
    echo "- ranks: $n"
    echo "  ppn: $n"
    echo "  nodes: 1"
    echo "  rules:"
    local i=0 rules=("$@")
    for r in "${rules[@]}"; do
      local min=${r%% *} alg=${r#* }
      echo "  - min_bytes: $min"
      if [ $((i + 1)) -lt ${#rules[@]} ]; then
        local next=${rules[$((i + 1))]%% *}
        echo "    max_bytes: $((next - 1))"
      fi
      echo "    algorithm: $alg"
      echo "    execution: blocking"
      echo "    time_us: 1.0"
      echo "    at_bytes: $min"
      i=$((i + 1))
    done
  } > "$f"
}

case "$MPI_FAMILY" in
  openmpi)
    "$MPICC" -O2 -o "$d/force_tuned" tests/c/force_tuned.c
    # Rank 0's sends under the monitoring: "peer bytes msgs;" per destination.
    sends() { # env...
      env OMPI_MCA_pml_monitoring_enable=1 OMPI_MCA_pml_monitoring_enable_output=1 "$@" \
        timeout 300 "$MPI_LAUNCHER" -n "$ranks" "${MPI_FLAGS[@]}" "$d/force_tuned" -1 > "$d/out" 2>&1 ||
        { tail -20 "$d/out" >&2; fail "the run ($*) failed"; }
      grep -q "force_tuned: all bytes correct" "$d/out" || { tail -20 "$d/out" >&2; fail "wrong bytes ($*)"; }
      awk '/POINT TO POINT/{p=1} /COLLECTIVES/{p=0} p && ($1=="E" || $1=="I") && $2==0 {print $3, $4, $6}' "$d/out" | sort -n | tr '\n' ';'
    }
    # The monitoring prints its matrix from every rank at once at
    # MPI_Finalize: a line broken by another rank's output reads as a
    # difference, so a difference is measured again (twice at most).
    declare -A got
    for pair in "1 linear:basic_linear" "6 binomial:binomial"; do
      id=${pair%% *} alg=${pair#* } ompi=${alg#*:} alg=${alg%%:*}
      table "$d/$alg.yaml" "$ranks" "0 $alg"
      "$bin" export "$d/$alg.yaml" --format openmpi -o "$d/$alg.rules" > "$d/export.log" 2>&1 || { cat "$d/export.log" >&2; fail "export --format openmpi failed"; }
      grep -qE "^0 $id [0-9]+ [0-9]+ # $ompi" "$d/$alg.rules" || { cat "$d/$alg.rules" >&2; fail "the export of $alg does not name coll/tuned algorithm $id"; }
      for _ in 1 2 3; do
        a=$(sends OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_dynamic_rules_filename="$d/$alg.rules")
        b=$(sends OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_bcast_algorithm="$id")
        [ -n "$a" ] && [ "$a" = "$b" ] && break
      done
      [ -n "$a" ] && [ "$a" = "$b" ] || fail "the exported rules file for $alg did not take effect: rank 0 sends $a with it, $b with algorithm $id forced at MPI_Init"
      got[$alg]=$a
      say "the exported rules file for $alg runs coll/tuned algorithm $id: rank 0 sends $a, as forced at MPI_Init"
    done
    [ "${got[linear]}" != "${got[binomial]}" ] || fail "linear and binomial send the same messages: the monitoring cannot tell them apart"
    ;;
  mpich)
    [ "$name" != impi ] || { say "Intel MPI reads neither export format (its own tuning files): nothing to check"; exit 0; }
    lib=""
    for l in "${MPI_PREFIX:+$MPI_PREFIX/lib/}libmpi.so.12" /usr/lib/x86_64-linux-gnu/libmpich.so.12; do
      [ -f "$l" ] && { lib=$l; break; }
    done
    [ -n "$lib" ] || fail "no libmpi.so.12 / libmpich.so.12 of $name found"
    "$MPICC" -O2 -o "$d/plain" tests/c/plain_bcast.c
    if [ -n "$MPI_PREFIX" ]; then export LD_LIBRARY_PATH=$MPI_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; fi
    for n in "$ranks" $((ranks + 1)); do
      table "$d/t$n.yaml" "$n" "0 binomial" "4096 scatter_allgather_ring" "1048576 knomial"
      "$bin" export "$d/t$n.yaml" --format mpich --mpich-base "$lib" -o "$d/t$n.json" > "$d/export.log" 2>&1 ||
        { cat "$d/export.log" >&2; fail "export --format mpich failed"; }
      MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE="$d/t$n.json" timeout 300 "$MPI_LAUNCHER" -n "$n" "${MPI_FLAGS[@]}" \
        "$d/plain" 1 100 4095 4096 5000 70000 1048575 1048576 1048579 > "$d/out" 2>&1 ||
        { tail -20 "$d/out" >&2; fail "plain_bcast with the exported JSON failed at $n ranks"; }
      grep -q "plain_bcast: all bytes correct" "$d/out" || { tail -20 "$d/out" >&2; fail "wrong bytes with the exported JSON at $n ranks"; }
      say "MPICH loads the exported JSON and broadcasts every byte correctly at $n ranks"
    done
    # The same file, its bcast algorithm names broken: MPICH must refuse it.
    sed 's/algorithm=MPIR_Bcast_intra_binomial/algorithm=MPIR_Bcast_intra_no_such_algorithm/' "$d/t$ranks.json" > "$d/broken.json"
    ! cmp -s "$d/t$ranks.json" "$d/broken.json" || fail "the export names no MPIR_Bcast_intra_binomial to break"
    if MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE="$d/broken.json" timeout 120 "$MPI_LAUNCHER" -n "$ranks" "${MPI_FLAGS[@]}" \
        "$d/plain" 1 > "$d/out" 2>&1 && grep -q "plain_bcast: all bytes correct" "$d/out"; then
      fail "MPICH ran as well with a broken bcast algorithm name in the file: it does not read the file we give it"
    fi
    say "with one bcast algorithm name in that file broken, MPICH fails ($(grep -m1 -oiE '[^:]*(algorithm|error|abort)[^:]*' "$d/out" | head -1 | cut -c1-100))"
    ;;
  *) fail "export check for the $MPI_FAMILY family: none (the export formats are Open MPI's and MPICH's)" ;;
esac
