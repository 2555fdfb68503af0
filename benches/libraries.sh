#!/usr/bin/env bash
# colltune against each MPI library's own broadcasts, one library after the
# other, RUNS times each: per run, one jobs/library-baselines.sh (colltune's
# algorithms, the library's default MPI_Bcast and its forced algorithms in
# one CSV), then the two ratios `colltune report --comparison` gives for that
# run (geometric means over the message sizes, 1 B..4 MiB by default, of
# colltune's best per size over the library's default and over its best
# forced algorithm at that size); at the end, per library, the median of the
# runs' ratios and their range.
#
#   benches/libraries.sh OUTDIR [NAME...]
# NAME: openmpi4 mpich4 openmpi5 mpich5 impi mpich5-abi (default: those
# built, jobs/build.sh --mpi NAME). Environment: RUNS (3), RANKS (4),
# BENCH_ARGS (bench arguments, default --collective bcast), CHECK_FORCING
# (Open MPI 5's proof that forcing takes effect: run once, before its first
# run; 0 skips it), SUMMARY_ONLY=1 (no runs: the summary of the reports
# already in OUTDIR).
# OUTDIR keeps each run's CSV and report (NAME-runK.csv, NAME-runK.txt) and
# the summary (summary.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: benches/libraries.sh OUTDIR [NAME...]}
shift
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for n in openmpi4 mpich4 openmpi5 mpich5 impi mpich5-abi; do
    dir=target/$n
    [ "$n" = openmpi4 ] && dir=target
    [ -x "$dir/release/colltune" ] && names+=("$n")
  done
fi
[ ${#names[@]} -gt 0 ] || { echo "libraries: nothing built: jobs/build.sh --mpi NAME" >&2; exit 2; }
RUNS=${RUNS:-3}
read -r -a bench_args <<< "${BENCH_ARGS:---collective bcast}"
mkdir -p "$out"

# The two ratios of one report, "default forced" (either may be "-").
ratios() {
  local d f
  d=$(sed -n 's/^geometric mean, best of colltune \/ MPI library default: \([0-9.]*\)x.*/\1/p' "$1" | tail -1)
  f=$(sed -n 's/^geometric mean, best of colltune \/ best forced .*: \([0-9.]*\)x.*/\1/p' "$1" | tail -1)
  echo "${d:--} ${f:--}"
}

# median and range of numbers on stdin, "-" when there are none.
spread() {
  sort -g | awk '{v[NR] = $1} END {
    if (NR == 0) { print "-"; exit }
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.3f (%.3f-%.3f, %d runs)\n", m, v[1], v[NR], NR }'
}

for n in "${names[@]}"; do
  [ "${SUMMARY_ONLY:-0}" = 1 ] && break
  for k in $(seq 1 "$RUNS"); do
    check=0
    [ "$k" = 1 ] && check=${CHECK_FORCING:-1}
    echo "== $n run $k/$RUNS ($(date +%T))"
    if CHECK_FORCING=$check jobs/library-baselines.sh "$n" "$out/$n-run$k.csv" "${bench_args[@]}" \
        > "$out/$n-run$k.txt" 2>&1; then
      echo "   default, best forced: $(ratios "$out/$n-run$k.txt")"
    else
      echo "   failed: see $out/$n-run$k.txt"
    fi
  done
done

{
  echo "colltune's best per size / the library's default MPI_Bcast, and / its best forced algorithm"
  echo "(geometric means over the sizes of one run; median and range over runs; RANKS=${RANKS:-4}, ${bench_args[*]})"
  printf '%-11s %-34s %-34s\n' library "/ default" "/ best forced"
  for n in "${names[@]}"; do
    d=$(for f in "$out/$n"-run*.txt; do [ -f "$f" ] && ratios "$f"; done | awk '$1 != "-" {print $1}' | spread)
    f=$(for f in "$out/$n"-run*.txt; do [ -f "$f" ] && ratios "$f"; done | awk '$2 != "-" {print $2}' | spread)
    printf '%-11s %-34s %-34s\n' "$n" "$d" "$f"
  done
} | tee "$out/summary.txt"
