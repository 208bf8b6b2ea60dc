#!/usr/bin/env bash
# Run here (where hybridc is built): compiles the benchmark models from
# their config.json alone (bench/models: OPT-1.3B, GPT-2 124M and Llama 1B
# shapes, bf16; MODEL.hyb for generation (MODEL-prologues.hyb with
# --norm-prologues), MODEL-train.hyb with the training
# step, opt-1.3b-ppo.hyb with both for the PPO-shaped step) into
# BUILD/device-bundles/bench, and stages the anchor
# scripts of ../shared/bench into BUILD/anchors, for a GPU host that has
# neither the compiler nor ../shared (DS_WHEELS=1 adds the DeepSpeed
# anchor's wheels, below). Carry both (with BUILD/device-kit,
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
# DeepSpeed-Chat's step 3 as its run_1.3b.sh sets it up (bench/rlhf_step3.sh):
# the actor OPT-1.3B with the PPO loss, critic and reward OPT-350m value
# models for prompts of 256 tokens, bf16; and 64 prompts of 256 random ids.
"$build/bin/hybridc" compile "$root/bench/models/opt-1.3b" --train --ppo \
  --dtype=bfloat16 -o "$out/opt-1.3b-rlhf-actor.hyb" -q
"$build/bin/hybridc" compile "$root/bench/models/opt-350m" --head value --train \
  --ppo --prompt-length 256 --dtype=bfloat16 -o "$out/opt-350m-rlhf-critic.hyb" -q
python3 -c '
import json, random, sys
rng = random.Random(0)
with open(sys.argv[1], "w") as f:
    for _ in range(64):
        f.write(json.dumps({"prompt": [rng.randrange(3, 50272) for _ in range(256)]}) + "\n")
' "$out/rlhf-prompts.jsonl"
if [ -d "$shared/bench" ]; then
  cp -f "$shared"/bench/anchor_*.py "$build/anchors/"
else
  echo "no $shared/bench: the anchors will not run" >&2
fi
# DS_WHEELS=1: also download what the DeepSpeed Hybrid Engine anchor needs
# on a GPU host that reaches no package index (../shared/bench/ANCHORS.md's
# list, plus the small pure-Python dependencies DeepSpeed imports that the
# host's PyTorch image may lack) into BUILD/anchors/wheels (~18 MB);
# bench/gpu.sh installs them there for ANCHORS=ds.
if [ "${DS_WHEELS:-0}" = 1 ]; then
  wheels=$build/anchors/wheels
  mkdir -p "$wheels"
  echo "downloading the DeepSpeed anchor's wheels into $wheels"
  pip download -q --no-deps --no-binary :all: -d "$wheels" deepspeed==0.19.8
  pip download -q --no-deps --only-binary :all: --python-version 3.12 \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 --platform any -d "$wheels" \
    transformers==4.48.3 tokenizers==0.21.1 huggingface_hub==0.27.1 hjson \
    pydantic pydantic_core annotated_types typing_inspection typing_extensions \
    py-cpuinfo einops nvidia-ml-py msgpack
fi
echo "staged $out and $build/anchors"
