#!/usr/bin/env bash
# Checks that forcing an Open MPI coll/tuned broadcast algorithm through the
# MPI tool interface takes effect on this library, the way colltune's
# `bench --baseline ompi-tuned` forces its baselines (and, where MPI_T can
# write coll/adapt's variables, Open MPI 5.0, coll/adapt's, as
# `--baseline ompi-adapt` does):
#   jobs/check-ompi-forcing.sh openmpi4|openmpi5 [RANKS]
# CHECK=tuned,adapt,han (the default: all that apply) chooses the parts.
# For each algorithm 1..9, tests/c/force_tuned.c runs twice under Open MPI's
# pml monitoring (which counts the messages between every pair of ranks):
# forced with MPI_T_cvar_write + MPI_Comm_dup, and forced by the environment
# at MPI_Init (OMPI_MCA_coll_tuned_bcast_algorithm, as Open MPI documents).
# The pattern of messages rank 0 sends must be the same; and algorithm 1
# (basic linear: the root sends to every rank) must differ from 6 (binomial).
# Exit 1 naming the algorithm where they differ.
#
# coll/adapt (tests/c/force_adapt.c; Open MPI 5.0, whose coll/adapt
# variables MPI_T may write: ompi_info says "writeable"):
# - which component serves the broadcast: with --mca coll_base_verbose 10,
#   Open MPI prints each communicator's selection ("coll:base:comm_select:
#   selecting <component>, priority <p>, Enabled", lowest priority first,
#   each enabled module overriding the functions it has). The duplicate
#   made with coll_adapt_priority raised through MPI_T must show adapt at
#   priority 100 on every rank, above every other enabled component; the
#   duplicate made after the priority was put back (and MPI_COMM_WORLD)
#   must show it at 0 (where it is "Disabled": first in the selection, it
#   finds no reduce under it);
# - which algorithm and segment: for each of coll_adapt_bcast_algorithm's
#   values 1..6 (read from ompi_info: binomial ... linear), rank 0's
#   messages under the pml monitoring, forced through MPI_T, equal those
#   with adapt forced by the environment at MPI_Init
#   (OMPI_MCA_coll_adapt_priority=100, _bcast_algorithm=N, as Open MPI's
#   4.1.0 release notes enable it); linear (the root sends to every rank)
#   differs from binomial; pipeline with 64 KiB segments sends rank 1 16
#   messages per 1 MiB broadcast where unsegmented it sends 1 (150 more over
#   the 10 broadcasts; at least 100 more asked).
# coll/han: on one node Open MPI 5.0's coll/han disqualifies itself on
# every communicator ("comm has only local processes; disqualifying
# myself", coll_han_module.c), even at priority 100: the check expects
# that line. Across nodes it serves: as root (network namespaces), the
# check brings up the emulated cluster (jobs/emucluster/emucluster, 2
# nodes x 2 ranks; down again at the end) and runs tests/c/force_han.c
# there:
# - coll_base_verbose: the duplicate made with coll_han_priority=100
#   written through MPI_T selects han at 100 on all 4 ranks (MPI_COMM_WORLD
#   and the duplicate made after see it at its own 35), and han's own
#   verbose output (coll_han_verbose 1: "coll:han:get_algorithm bcast ...
#   algorithm:2 simple") shows it running the algorithm written;
# - the pml monitoring: coll_han_use_bcast_algorithm (1 intra, 2 simple)
#   and coll_han_bcast_segsize (intra's pipeline segment), written through
#   MPI_T after the duplicate is made (han reads them at every call), give
#   rank 0 the messages they give forced at MPI_Init (OMPI_MCA_...); intra
#   with 8 KiB segments differs from 64 KiB ones, simple from intra;
# - the negative: coll_han_bcast_low_module (0 tuned, 1 sm: the component
#   of intra's intra-node step) forced at MPI_Init to sm changes rank 0's
#   messages to its node neighbour (shared memory instead of the pml);
#   written through MPI_T, before or after the duplicate, it changes
#   nothing: han turns the string into a module id once, when it registers
#   its variables at MPI_Init (mca_coll_han_query_module_from_mca,
#   coll_han_component.c); _up_module goes through the same conversion
#   (not checked: on 2 nodes libnbc and adapt send rank 0 the same
#   messages). Exit 1 if that changes (docs/mpi-libraries.md's baselines section and
#   bench would then be wrong).
# Not root: that part is skipped, saying so. Another job's emulated cluster
# is waited for (EMU_WAIT_S, 600 s; then exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: jobs/check-ompi-forcing.sh openmpi4|openmpi5 [ranks]}
ranks=${2:-4}
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$name"
[ "$MPI_FAMILY" = openmpi ] || { echo "check-ompi-forcing: $name is not Open MPI" >&2; exit 2; }
check=${CHECK:-tuned,adapt,han}
want() { [[ ",$check," == *",$1,"* ]]; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$MPICC" -O2 -o "$d/force_tuned" tests/c/force_tuned.c
# Rank 0's sends, "peer bytes msgs" per destination (`;` between), from
# Open MPI's pml monitoring matrix: `monitored OUT SAYS COMMAND...` runs
# COMMAND (which turns the monitoring on) with its output in OUT, checks
# that the program said SAYS, and reads the matrix. The monitoring writes
# it at MPI_Finalize from every rank at once: a line can be broken by
# another rank's output, so an empty answer is measured again (twice at
# most). The one reader of the matrix for coll/tuned, coll/adapt and coll/han.
monitored() {
  local out=$1 says=$2 r="" i
  shift 2
  for i in 1 2 3; do
    "$@" > "$out" 2>&1 || {
      tail -20 "$out" >&2
      echo "check-ompi-forcing: the run failed: $*" >&2
      exit 1
    }
    grep -q "$says" "$out" || { tail -20 "$out" >&2; exit 1; }
    # Point-to-point section, rank 0's lines: E 0 <peer> <bytes> bytes <msgs> msgs sent ...
    r=$(awk '/POINT TO POINT/{p=1} /COLLECTIVES/{p=0} p && ($1=="E" || $1=="I") && $2==0 {print $3, $4, $6}' "$out" | sort -n | tr '\n' ';')
    [ -n "$r" ] && break
  done
  echo "$r"
}
MONITOR=(OMPI_MCA_pml_monitoring_enable=1 OMPI_MCA_pml_monitoring_enable_output=1)
sends_retry() { # mode alg
  local extra=() arg=$2
  if [ "$1" = env ]; then extra=(-x "OMPI_MCA_coll_tuned_bcast_algorithm=$2"); arg=-1; fi
  monitored "$d/out" "force_tuned: all bytes correct" env OMPI_MCA_coll_tuned_use_dynamic_rules=1 "${MONITOR[@]}" \
    timeout 300 "$MPI_LAUNCHER" -n "$ranks" "${MPI_FLAGS[@]}" "${extra[@]}" "$d/force_tuned" "$arg"
}
rc=0
declare -A seen
want tuned && for alg in 1 2 3 4 5 6 7 8 9; do
  # A line broken by another rank's output reads as a difference: measure
  # both again (twice at most) before calling it one.
  for _ in 1 2 3; do
    a=$(sends_retry mpit "$alg")
    b=$(sends_retry env "$alg")
    [ "$a" = "$b" ] && break
  done
  seen[$alg]=$a
  if [ "$a" = "$b" ]; then
    echo "check-ompi-forcing ($name, $ranks ranks): algorithm $alg: forced through MPI_T = forced at init: rank 0 sends $a"
  else
    echo "check-ompi-forcing ($name, $ranks ranks): algorithm $alg: MPI_T forcing did NOT take effect: MPI_T $a, at init $b" >&2
    rc=1
  fi
done
if want tuned && [ "${seen[1]}" = "${seen[6]}" ]; then
  echo "check-ompi-forcing ($name): basic linear and binomial send the same messages: the monitoring cannot tell algorithms apart here" >&2
  rc=1
fi

ompi_info=${MPI_PREFIX:+$MPI_PREFIX/bin/}ompi_info
[ -x "$ompi_info" ] || ompi_info=$(command -v ompi_info.openmpi || command -v ompi_info || true)
info=$([ -n "$ompi_info" ] && "$ompi_info" --all --parsable 2> /dev/null || true)
# coll/adapt: forced through MPI_T where Open MPI lets it write the variables.
if want adapt && grep -q '^mca:coll:adapt:param:coll_adapt_priority:status:writeable' <<< "$info"; then
  "$MPICC" -O2 -o "$d/force_adapt" tests/c/force_adapt.c
  # The names Open MPI gives the values: "0: tuned, 1: binomial, ...".
  adapt_names=$(sed -n 's/^mca:coll:adapt:param:coll_adapt_bcast_algorithm:help:[^,]*, //p' <<< "$info")
  adapt_name() { tr ',' '\n' <<< "$adapt_names" | sed -n "s/^ *$1: //p"; }
  # 1. The component: coll_base_verbose's selection, per communicator.
  OMPI_MCA_coll_base_verbose=10 timeout 300 "$MPI_LAUNCHER" -n "$ranks" "${MPI_FLAGS[@]}" "$d/force_adapt" 6 0 > "$d/verbose" 2>&1 \
    || { tail -20 "$d/verbose" >&2; echo "check-ompi-forcing: force_adapt under coll_base_verbose failed" >&2; exit 1; }
  grep -q "force_adapt: all bytes correct" "$d/verbose" || { tail -20 "$d/verbose" >&2; exit 1; }
  # Per rank: MPI_COMM_WORLD, the forced duplicate, the one made after.
  # adapt at priority 0 comes first in the selection and finds no reduce
  # under it to keep ("Disabled"); at 100 it comes last and is enabled.
  high=$(grep -cE 'coll:base:comm_select: selecting +adapt, priority +100, Enabled' "$d/verbose" || true)
  low=$(grep -cE 'coll:base:comm_select: selecting +adapt, priority +0,' "$d/verbose" || true)
  # Nothing enabled above adapt's 100 on any communicator.
  above=$(grep -E 'coll:base:comm_select: selecting .*Enabled' "$d/verbose" | awk -F'priority' '{split($2, a, ","); if (a[1] + 0 > 100) n++} END {print n + 0}')
  if [ "$high" -eq "$ranks" ] && [ "$low" -ge $((2 * ranks)) ] && [ "$above" -eq 0 ]; then
    echo "check-ompi-forcing ($name, $ranks ranks): coll/adapt: the duplicate made with coll_adapt_priority=100 written through MPI_T selects adapt at priority 100 on all $ranks ranks, nothing enabled above it (coll_base_verbose: \"$(grep -m1 -oE 'selecting +adapt, priority +100, Enabled' "$d/verbose" | tr -s ' ')\"); MPI_COMM_WORLD and the duplicate made after the priority was put back see it at 0 ($low times)"
  else
    grep -E 'comm_select: (new communicator|selecting)' "$d/verbose" | head -40 >&2
    echo "check-ompi-forcing ($name): coll/adapt was NOT selected as forced: adapt enabled at 100 on $high rank(s) (want $ranks), at 0 on $low communicator(s) (want $((2 * ranks))), $above enabled above 100" >&2
    rc=1
  fi
  # 2. The algorithm and segment: MPI_T = environment, per algorithm.
  adapt_retry() { # mode alg seg
    local extra=() arg=("$2" "$3")
    if [ "$1" = env ]; then
      extra=(-x OMPI_MCA_coll_adapt_priority=100 -x "OMPI_MCA_coll_adapt_bcast_algorithm=$2" -x "OMPI_MCA_coll_adapt_bcast_segment_size=$3")
      arg=(-1)
    fi
    monitored "$d/out" "force_adapt: all bytes correct" env "${MONITOR[@]}" \
      timeout 300 "$MPI_LAUNCHER" -n "$ranks" "${MPI_FLAGS[@]}" "${extra[@]}" "$d/force_adapt" "${arg[@]}"
  }
  declare -A aseen
  for case in 1:0 2:0 3:0 4:0 5:0 6:0 4:65536; do
    alg=${case%%:*} seg=${case#*:}
    for _ in 1 2 3; do
      a=$(adapt_retry mpit "$alg" "$seg")
      b=$(adapt_retry env "$alg" "$seg")
      [ "$a" = "$b" ] && break
    done
    aseen[$case]=$a
    if [ -n "$a" ] && [ "$a" = "$b" ]; then
      echo "check-ompi-forcing ($name, $ranks ranks): coll/adapt algorithm $alg ($(adapt_name "$alg")), segment $seg: forced through MPI_T = forced at init: rank 0 sends $a"
    else
      echo "check-ompi-forcing ($name, $ranks ranks): coll/adapt algorithm $alg ($(adapt_name "$alg")), segment $seg: MPI_T forcing did NOT take effect: MPI_T $a, at init $b" >&2
      rc=1
    fi
  done
  if [ "${aseen[1:0]}" = "${aseen[6:0]}" ]; then
    echo "check-ompi-forcing ($name): coll/adapt's binomial and linear send the same messages: the algorithm did not change" >&2
    rc=1
  fi
  # Rank 0's messages to rank 1 (pipeline: its only peer), whole and in 64 KiB segments.
  m0=$(tr ';' '\n' <<< "${aseen[4:0]}" | awk '$1==1 {print $3}')
  m64=$(tr ';' '\n' <<< "${aseen[4:65536]}" | awk '$1==1 {print $3}')
  if [ -n "$m0" ] && [ -n "$m64" ] && [ "$m64" -ge $((m0 + 100)) ]; then
    echo "check-ompi-forcing ($name): coll/adapt's segment takes effect: pipeline sends rank 1 $m0 messages unsegmented, $m64 with 64 KiB segments (10 broadcasts of 1 MiB)"
  else
    echo "check-ompi-forcing ($name): coll/adapt's segment did NOT take effect: pipeline sends rank 1 $m0 messages unsegmented, $m64 with 64 KiB segments" >&2
    rc=1
  fi
elif want adapt; then
  echo "check-ompi-forcing ($name): coll/adapt's variables are not writable through MPI_T here ($(grep '^mca:coll:adapt:param:coll_adapt_priority:status' <<< "$info" | cut -d: -f7)): not checked; bench has no ompi-adapt baselines on this library"
fi

# coll/han on one node: disqualified, whatever its priority.
if want han && grep -q '^mca:coll:han:param:coll_han_priority:status:writeable' <<< "$info"; then
  OMPI_MCA_coll_base_verbose=10 OMPI_MCA_coll_han_priority=100 timeout 300 "$MPI_LAUNCHER" -n "$ranks" "${MPI_FLAGS[@]}" "$d/force_tuned" -1 > "$d/han" 2>&1 \
    || { tail -20 "$d/han" >&2; echo "check-ompi-forcing: force_tuned with coll_han_priority=100 failed" >&2; exit 1; }
  han_out=$(grep -cE 'coll:han:comm_query .*comm has only local processes; disqualifying myself' "$d/han" || true)
  han_in=$(grep -cE 'coll:base:comm_select: selecting +han,' "$d/han" || true)
  if [ "$han_out" -ge "$ranks" ] && [ "$han_in" -eq 0 ]; then
    echo "check-ompi-forcing ($name, $ranks ranks): coll/han at priority 100 on one node: disqualified on every communicator ($han_out times: \"comm has only local processes; disqualifying myself\"), never selected: its broadcast choices cannot run here"
  else
    echo "check-ompi-forcing ($name): coll/han on one node: expected it disqualified (\"comm has only local processes\"), found that $han_out times and han selected $han_in times: revisit docs/mpi-libraries.md's baselines section" >&2
    rc=1
  fi
fi

# coll/han across nodes: on the emulated cluster (root).
emu=jobs/emucluster/emucluster
if want han && [ "$name" = openmpi5 ] && grep -q '^mca:coll:han:param:coll_han_use_bcast_algorithm:status:writeable' <<< "$info"; then
  if [ "$(id -u)" != 0 ]; then
    echo "check-ompi-forcing ($name): coll/han across nodes NOT checked: the emulated cluster needs root (network namespaces)"
  elif ! "$emu" wait "${EMU_WAIT_S:-600}"; then
    echo "check-ompi-forcing ($name): coll/han across nodes NOT checked: the emulated cluster (ctnode namespaces) is in use by another job" >&2
    rc=1
  else
    "$MPICC" -O2 -o "$d/force_han" tests/c/force_han.c
    trap '"$emu" down > /dev/null 2>&1 || true; rm -rf "$d"' EXIT
    NODES=2 "$emu" up > "$d/emu" 2>&1 || { cat "$d/emu" >&2; echo "check-ompi-forcing: emucluster up failed" >&2; exit 1; }
    hrun() { timeout 300 "$emu" run --mpi "$name" -np 4 --host ctnode1:2,ctnode2:2 "$@"; }
    # 1. The component and the algorithm, from Open MPI's own words.
    hrun -x OMPI_MCA_coll_base_verbose=10 -x OMPI_MCA_coll_han_verbose=1 "$d/force_han" after coll_han_use_bcast_algorithm=2 > "$d/hverbose" 2>&1 \
      || { tail -20 "$d/hverbose" >&2; echo "check-ompi-forcing: force_han under coll_base_verbose failed" >&2; exit 1; }
    grep -q "force_han: all bytes correct" "$d/hverbose" || { tail -20 "$d/hverbose" >&2; exit 1; }
    high=$(grep -cE 'coll:base:comm_select: selecting +han, priority +100, Enabled' "$d/hverbose" || true)
    own=$(grep -cE 'coll:base:comm_select: selecting +han, priority +35, Enabled' "$d/hverbose" || true)
    above=$(grep -E 'coll:base:comm_select: selecting .*Enabled' "$d/hverbose" | awk -F'priority' '{split($2, a, ","); if (a[1] + 0 > 100) n++} END {print n + 0}')
    simple=$(grep -cE 'coll:han:get_algorithm bcast size:1048576 algorithm:2 simple' "$d/hverbose" || true)
    if [ "$high" -eq 4 ] && [ "$own" -ge 8 ] && [ "$above" -eq 0 ] && [ "$simple" -eq 10 ]; then
      echo "check-ompi-forcing ($name, 2 emulated nodes x 2 ranks): coll/han: the duplicate made with coll_han_priority=100 written through MPI_T selects han at priority 100 on all 4 ranks, nothing enabled above it; MPI_COMM_WORLD and the duplicate made after select it at its own 35 ($own times); coll_han_use_bcast_algorithm=2 written after the duplicate: han says \"$(grep -m1 -oE 'coll:han:get_algorithm bcast size:1048576 algorithm:2 simple' "$d/hverbose")\" for each of the 10 broadcasts"
    else
      grep -E 'comm_select: selecting|get_algorithm|disqualif' "$d/hverbose" | head -40 >&2
      echo "check-ompi-forcing ($name): coll/han was NOT forced as written: han enabled at 100 on $high rank(s) (want 4), at 35 on $own communicator(s) (want 8), $above enabled above 100, the simple broadcast run $simple times (want 10)" >&2
      rc=1
    fi
    # 2. Rank 0's messages: through MPI_T (after the duplicate) = at MPI_Init.
    han_retry() { # mode NAME=VALUE...
      local mode=$1 extra=() args=() kv
      shift
      if [ "$mode" = env ]; then
        for kv in "$@"; do extra+=(-x "OMPI_MCA_$kv"); done
      elif [ "$mode" != none ]; then
        args=("$mode" "$@")
      fi
      monitored "$d/hout" "force_han: all bytes correct" \
        hrun -x "${MONITOR[0]}" -x "${MONITOR[1]}" "${extra[@]}" "$d/force_han" "${args[@]}"
    }
    declare -A hseen
    for case in "coll_han_use_bcast_algorithm=1 coll_han_bcast_segsize=65536" "coll_han_use_bcast_algorithm=1 coll_han_bcast_segsize=8192" \
      "coll_han_use_bcast_algorithm=1 coll_han_bcast_segsize=0" "coll_han_use_bcast_algorithm=2"; do
      read -r -a kv <<< "$case"
      for _ in 1 2 3; do
        a=$(han_retry after "${kv[@]}")
        b=$(han_retry env "${kv[@]}")
        [ "$a" = "$b" ] && break
      done
      hseen[$case]=$a
      if [ -n "$a" ] && [ "$a" = "$b" ]; then
        echo "check-ompi-forcing ($name, 2x2 emulated): coll/han $case: forced through MPI_T = forced at init: rank 0 sends $a"
      else
        echo "check-ompi-forcing ($name, 2x2 emulated): coll/han $case: MPI_T forcing did NOT take effect: MPI_T $a, at init $b" >&2
        rc=1
      fi
    done
    i64="coll_han_use_bcast_algorithm=1 coll_han_bcast_segsize=65536"
    if [ "${hseen[$i64]}" = "${hseen[coll_han_use_bcast_algorithm=1 coll_han_bcast_segsize=8192]}" ] || [ "${hseen[$i64]}" = "${hseen[coll_han_use_bcast_algorithm=2]}" ]; then
      echo "check-ompi-forcing ($name): coll/han's intra at 64 KiB and 8 KiB segments, or intra and simple, send the same messages: the choices did not change anything" >&2
      rc=1
    fi
    # 3. The modules of intra's two steps: read only at MPI_Init.
    plain=$(han_retry none)
    for _ in 1 2 3; do
      env_sm=$(han_retry env coll_han_bcast_low_module=1)
      [ "$env_sm" != "$plain" ] && break
    done
    for _ in 1 2 3; do
      after_sm=$(han_retry after coll_han_bcast_low_module=1)
      before_sm=$(han_retry before coll_han_bcast_low_module=1)
      [ "$after_sm" = "$plain" ] && [ "$before_sm" = "$plain" ] && break
    done
    if [ -n "$plain" ] && [ "$env_sm" != "$plain" ] && [ "$after_sm" = "$plain" ] && [ "$before_sm" = "$plain" ]; then
      echo "check-ompi-forcing ($name, 2x2 emulated): coll/han's module choices are read only at MPI_Init: coll_han_bcast_low_module=1 (sm) forced at init changes rank 0's messages ($plain -> $env_sm); written through MPI_T (it reads back), before or after the duplicate, nothing changes ($after_sm): no up/low baselines"
    else
      echo "check-ompi-forcing ($name, 2x2 emulated): coll_han_bcast_low_module: expected at-init-only (at init $env_sm vs none $plain; MPI_T after the duplicate $after_sm, before $before_sm): revisit bench's coll/han baselines and docs/mpi-libraries.md" >&2
      rc=1
    fi
  fi
fi
exit $rc
