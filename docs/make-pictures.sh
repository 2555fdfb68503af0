#!/usr/bin/env bash
# Redraws the README's pictures (MPI-free; a few minutes, most of it the
# simulated 1,024-node tune). Uses target/release/colltune (build it with
# `cargo build --release -p colltune --no-default-features`). Where
# ImageMagick is installed, the PNGs are reduced to 64 colours to stay small.
set -euo pipefail
cd "$(dirname "$0")/.."
ct=${CT:-target/release/colltune}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
model=tuning-tables/models/ib-hdr200-epyc-zen3.yaml

"$ct" plot tuning-tables/vm-2core.yaml -o docs/map-vm-2core.png
"$ct" tune --model "$model" --layout 4x8 --collective bcast \
  --table "$d/t32.yaml" --csv "$d/t32.csv" >/dev/null
"$ct" plot "$d/t32.csv" "$d/t32.yaml" -o docs/plot-sim-4x8.png
"$ct" plot "$d/t32.yaml" -o docs/map-sim-4x8.png
"$ct" tune --model "$model" --layout 1024x1 --comm-sizes 16,64,256 \
  --collective bcast --sizes 1,64,4K,64K,1M --budget 4 \
  --table "$d/t1024.yaml" --csv "$d/t1024.csv" >/dev/null
"$ct" plot "$d/t1024.yaml" -o docs/map-sim-1024x1.png
"$ct" plot "$d/t1024.csv" "$d/t1024.yaml" --ranks 1024 -o docs/plot-sim-1024x1.png

im=""
for c in /usr/bin/convert convert magick; do
  if "$c" -version 2>/dev/null | grep -q ImageMagick; then im=$c; break; fi
done
if [ -n "$im" ]; then
  for f in docs/*.png; do "$im" "$f" -colors 64 "PNG8:$f"; done
else
  echo "make-pictures: no ImageMagick: PNGs left at full colour (larger)" >&2
fi
ls -l docs/*.png
