#!/usr/bin/env bash
# Rendering time of the pictures on large inputs, MPI-free:
#  - a decision map of a 1,000-rule table (50 communicator shapes x 20
#    size ranges, synthetic, every bcast family);
#  - plot and report --html of a 1-million-row CSV (a simulated sweep on 32
#    ranks, replicated as 170 runs with a little noise).
# Usage: benches/plot.sh [colltune binary]   (default target/release/colltune;
# build it with `cargo build --release -p colltune --no-default-features`).
set -euo pipefail
cd "$(dirname "$0")/.."
ct=${1:-target/release/colltune}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT

# The 1,000-rule table.
{
  echo "schema: 1"
  echo "provenance: {host: bench, mpi: none, date: '2026-01-01T00:00:00Z', command: benches/plot.sh, colltune: 0.1.0, source: synthetic, sweep: {mode: synthetic}}"
  echo "bcast:"
  algs=(linear binomial knomial binary split_binary chain pipeline scatter_allgather scatter_allgather_ring hierarchical)
  for s in $(seq 0 49); do
    nodes=$(( 1 << (s / 5) )); ppn=$(( 1 << (s % 5) ))
    echo "- {ranks: $((nodes * ppn)), ppn: $ppn, nodes: $nodes, rules: ["
    for r in $(seq 0 19); do
      lo=$(( r == 0 ? 0 : 1 << r ))
      a=${algs[$(( (s + r * 3) % 10 ))]}
      [ "$a" = hierarchical ] && [ "$nodes" -eq 1 ] && a=binomial
      m=$(awk -v r="$r" -v s="$s" 'BEGIN{printf "%.3f", ((r*7+s*3)%25)/100}')
      if [ "$r" -lt 19 ]; then
        echo "  {min_bytes: $lo, max_bytes: $(( (1 << (r + 1)) - 1 )), algorithm: $a, execution: blocking, margin: $m},"
      else
        echo "  {min_bytes: $lo, algorithm: $a, execution: blocking, margin: $m}]}"
      fi
    done
  done
} > "$d/t1000.yaml"
"$ct" validate "$d/t1000.yaml" >/dev/null

# The 1-million-row CSV.
"$ct" simulate --model tuning-tables/models/ib-hdr200-epyc-zen3.yaml --layout 4x8 \
  --collective bcast --sweep segment=8K,64K --sizes 1..4M --csv "$d/base.csv" --summary-only >/dev/null
rows=$(( $(wc -l < "$d/base.csv") - 1 ))
runs=$(( (1000000 + rows - 1) / rows ))
# (run and time counted from the end: a quoted spec may hold commas)
awk -F, -v OFS=, -v runs="$runs" 'NR == 1 { print; next }
  { line[++n] = $0 }
  END { srand(1); for (r = 1; r <= runs; r++) for (i = 1; i <= n; i++) {
          $0 = line[i]; $(NF - 7) = r; $(NF - 5) = $(NF - 5) * (0.97 + 0.06 * rand()); print } }' \
  "$d/base.csv" > "$d/big.csv"
echo "inputs: $(grep -c min_bytes "$d/t1000.yaml") rules; $(( $(wc -l < "$d/big.csv") - 1 )) CSV rows ($(du -h "$d/big.csv" | cut -f1))"

t() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN{printf "%.2f s\n", e-s}'; }
for ext in svg png; do
  echo "decision map, 1,000 rules, $ext: $(t "$ct" plot "$d/t1000.yaml" -o "$d/map.$ext")"
done
for ext in svg png; do
  echo "plot, 1M rows, $ext: $(t "$ct" plot "$d/big.csv" -o "$d/plot.$ext")"
done
echo "report --html, 1M rows: $(t "$ct" report "$d/big.csv" --html "$d/r.html")"
if [ -n "${KEEP:-}" ]; then cp "$d/map.png" "$d/plot.png" "$KEEP"/; fi
