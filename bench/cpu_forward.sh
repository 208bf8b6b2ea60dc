#!/usr/bin/env bash
# CPU float32 forward throughput of the GPT-2 124M shape (random weights),
# per batch size at seq 128: the figures bench/RESULTS.md and the README
# quote. Prints the commit and machine it measured, then one row per batch.
#
# usage: bench/cpu_forward.sh [BUILD] [THREADS]   (BUILD defaults to build)
# With BUNDLE=path set, runs that bundle (compiled elsewhere: a host without
# hybridc, such as the GPU host) instead of compiling the example.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
threads=${2:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# COMMIT may be given where the tree travels without .git (the GPU host).
commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
echo "commit $commit, $(date -u +%F)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
if [ -n "${BUNDLE:-}" ]; then
  cp "$BUNDLE" "$work/gpt2.hyb"
else
  "$build/bin/hybridc" compile examples/models/gpt2-124m -o "$work/gpt2.hyb" -q
fi
echo "| batch x seq | best of 5 | tokens/s | ms per token |"
echo "|---|---|---|---|"
for batch in 1 2 4 8; do
  line=$("$build/bin/hybrid-run" forward "$work/gpt2.hyb" --random-weights 0 \
    --batch $batch --seq 128 --repeat 5 --threads $threads 2>&1 | tail -1)
  ms=$(echo "$line" | sed -E 's/.*tokens, ([0-9.]+) ms \(best.*/\1/')
  tps=$(echo "$line" | sed -E 's/.*, ([0-9]+) tokens\/s.*/\1/')
  per=$(awk -v m="$ms" -v b=$batch 'BEGIN { printf "%.2f", m / (b * 128) }')
  echo "| $batch x 128 | $ms ms | $tps | $per |"
done
