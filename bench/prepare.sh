#!/usr/bin/env bash
# Run here (where hybridc is built): compiles the benchmark models from
# their config.json alone (bench/models: OPT-1.3B, GPT-2 124M and Llama 1B
# shapes, bf16; MODEL.hyb for generation (MODEL-prologues.hyb with
# --norm-prologues), MODEL-train.hyb with the training
# step, opt-1.3b-ppo.hyb with both for the PPO-shaped step) into
# BUILD/device-bundles/bench, and stages the anchor
# scripts of ../shared/bench into BUILD/anchors, for a GPU host that has
# neither the compiler nor ../shared. Carry both (with BUILD/device-kit,
# from test/gpu/prepare.sh) and run bench/gpu.sh there.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${HYBRIDC_SHARED:-$root/../shared}
out=$build/device-bundles/bench
mkdir -p "$out" "$build/anchors"
for m in opt-1.3b gpt2-124m llama-1b; do
  "$build/bin/hybridc" compile "$root/bench/models/$m" -o "$out/$m.hyb" -q
  # The same with decode's norms folded into the products they feed
  # (--norm-prologues, off by default), for bench/decode_variants.sh.
  "$build/bin/hybridc" compile "$root/bench/models/$m" --norm-prologues \
    -o "$out/$m-prologues.hyb" -q
  # The training step (bench/train.py): bf16 weights, f32 masters, AdamW.
  "$build/bin/hybridc" compile "$root/bench/models/$m" --train --dtype=bfloat16 \
    --no-generate -o "$out/$m-train.hyb" -q
done
# The PPO-shaped step (bench/ppo.py): the training bundle with generation
# kept (@prefill/@decode beside the training executables, one weight store).
for m in opt-1.3b; do
  "$build/bin/hybridc" compile "$root/bench/models/$m" --train --dtype=bfloat16 \
    -o "$out/$m-ppo.hyb" -q
done
if [ -d "$shared/bench" ]; then
  cp -f "$shared"/bench/anchor_*.py "$build/anchors/"
else
  echo "no $shared/bench: the anchors will not run" >&2
fi
echo "staged $out and $build/anchors"
