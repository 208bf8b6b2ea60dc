#!/usr/bin/env bash
# Run here (where LLVM/MLIR and FlatBuffers are): compiles the bundles the
# GPU host runs (each fixture from its HF config and its ONNX export in f32,
# and from its HF config in bf16, with its weights rounded to bf16 for the
# bf16 check; each fixture's training executables in f32 and bf16, its
# input_ids as training data and HF's causal-LM gradient of its logits for
# @backward) and stages the device kit. Carry
# BUILD/device-kit and BUILD/device-bundles to the GPU host, then run
# test/gpu/run.sh there.
set -euo pipefail
build=${1:-build}
fixtures=${HYBRIDC_FIXTURES:-$(cd "$(dirname "$0")/../.." && pwd)/../shared/fixtures}
make device-kit BUILD="$build" >/dev/null
out=$build/device-bundles
rm -rf "$out" && mkdir -p "$out"
for m in gpt2 opt llama; do
  mkdir -p "$out/$m"
  cp "$fixtures/$m/config.json" "$fixtures/$m/model.safetensors" \
    "$fixtures/$m/ref.safetensors" "$fixtures/$m/model.onnx" "$out/$m/"
  "$build/bin/hybridc" compile "$fixtures/$m" -o "$out/$m/hf.hyb" -q
  "$build/bin/hybridc" compile "$fixtures/$m" --train -o "$out/$m/train.hyb" -q
  "$build/bin/hybridc" compile "$fixtures/$m" --train --dtype=bfloat16 \
    --no-generate -o "$out/$m/train-bf16.hyb" -q
  python3 test/lit/e2e/Inputs/train_check.py tokens "$fixtures/$m/ref.safetensors" \
    "$out/$m/tokens.safetensors"
  python3 test/lit/e2e/Inputs/causal_lm_grad_logits.py "$fixtures/$m/ref.safetensors" \
    "$out/$m/grad_logits.safetensors"
  "$build/bin/hybridc" compile "$fixtures/$m" --dtype=bfloat16 -o "$out/$m/hf-bf16.hyb" -q
  python3 test/lit/e2e/Inputs/round_to_bf16.py "$fixtures/$m/model.safetensors" \
    "$out/$m/model-bf16.safetensors"
  "$build/bin/hybridc" compile "$fixtures/$m/model.onnx" -o "$out/$m/onnx.hyb" -q
  # The PPO step (hybrid-rlhf ppo-step --actor-bundle/--value-bundle, the
  # GPU host having no hybridc) and its oracle.
  "$build/bin/hybridc" compile "$fixtures/$m" --train --ppo --no-generate \
    -o "$out/$m/ppo-actor.hyb" -q
  "$build/bin/hybridc" compile "$fixtures/$m" --head value --train --ppo \
    --prompt-length 8 -o "$out/$m/ppo-value.hyb" -q
  cp "$fixtures/ppo/ppo_$m.safetensors" "$fixtures/ppo/ppo_${m}_value_models.safetensors" \
    "$out/$m/"
done
# hybrid-rlhf step3 on the GPU (PPO and GRPO learning a rule reward, as
# test/lit/e2e/rlhf-learns.test on the CPU): the actor with generation and
# both losses; the critic is ppo-value.hyb (prompts of 8).
"$build/bin/hybridc" compile "$fixtures/gpt2" --train --ppo --grpo --group-size 4 \
  -o "$out/gpt2/rlhf-actor.hyb" -q
python3 test/lit/e2e/Inputs/rlhf_data.py prompts "$out/gpt2/rlhf-prompts.jsonl" 64 512
# gpt2's hybrid engine in bf16 (training and generation in one bundle): the
# log-prob parity check of run.sh (generation's against @logprobs).
"$build/bin/hybridc" compile "$fixtures/gpt2" --train --dtype=bfloat16 \
  -o "$out/gpt2/train-gen-bf16.hyb" -q
# LoraTest's bundles (adapters on GPT-2's Conv1D weights; fused in f32 and
# bf16, unfused): fused and unfused generation on the GPU.
for variant in lora:--lora-generation=fused lora-bf16:--dtype=bfloat16 \
  lora-unfused:--lora-generation=unfused; do
  "$build/bin/hybridc" compile "$fixtures/gpt2" --lora-dim 4 --lora-alpha 8 \
    --lora-targets c_attn,c_proj,c_fc "${variant#*:}" \
    -o "$out/gpt2/${variant%%:*}.hyb" -q
done
# The optimizer tests' other training variants of gpt2 (bf16 is above).
for variant in fp16:--dtype=float16 sgd:--optimizer=sgd; do
  "$build/bin/hybridc" compile "$fixtures/gpt2" --train "${variant#*:}" \
    --no-generate -o "$out/gpt2/train-${variant%%:*}.hyb" -q
done
"$build/bin/hybridc" compile examples/models/gpt2-124m -o "$out/gpt2-124m.hyb" -q
"$build/bin/hybridc" compile examples/models/gpt2-124m --train --dtype=bfloat16 \
  --no-generate -o "$out/gpt2-124m-train-bf16.hyb" -q
echo "staged $build/device-kit and $out"
