#!/usr/bin/env bash
# The main job (`make demo`): compile models with hybridc and run them on the
# CPU runtime. With the shared fixtures present, both frontends are checked
# against HuggingFace's logits and greedy tokens, and a few SFT steps on the
# gpt2 fixture show training and generation sharing one weight store (the
# loss falls; generation continues the training data) and one PPO step of
# actor, reference, critic and reward model matches DeepSpeed-Chat's maths
# (hybrid-rlhf ppo-step against ../shared/fixtures/ppo); then a GPT-2 124M-shaped
# model (random weights: nothing is downloaded) shows forward throughput and
# generation speed (prefill, decode per token, tokens/s). It ends with
# DeepSpeed-Chat's three RLHF steps on the gpt2 fixture (hybrid-rlhf step1,
# step2, step3): SFT, a reward model, and a PPO run whose reward rises.
set -euo pipefail
build=${1:-build}
bin=$build/bin
fixtures=${HYBRIDC_FIXTURES:-$(cd "$(dirname "$0")/.." && pwd)/../shared/fixtures}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -d "$fixtures" ]; then
  echo "== parity with HuggingFace on the reference fixtures ($fixtures)"
  for m in gpt2 opt llama; do
    for src in hf onnx; do
      if [ $src = hf ]; then model=$fixtures/$m; weights=$fixtures/$m/model.safetensors
      else model=$fixtures/$m/model.onnx; weights=$model; fi
      "$bin/hybridc" compile "$model" -o "$work/$m-$src.hyb" -q
      "$bin/hybrid-run" forward "$work/$m-$src.hyb" --weights "$weights" \
        --inputs "$fixtures/$m/ref.safetensors" --out "$work/$m-$src.out.safetensors" 2>/dev/null
      printf '%-6s %-5s ' "$m" "$src"
      "$bin/hybrid-run" compare "$work/$m-$src.out.safetensors" "$fixtures/$m/ref.safetensors" \
        --name logits --atol 1e-3
    done
    # Greedy generation through the KV cache: HF's 16 tokens exactly.
    printf '%-6s %-5s ' "$m" "gen"
    "$bin/hybrid-run" generate "$work/$m-hf.hyb" --weights "$fixtures/$m" \
      --allow-extra lm_head.weight --prompt "$fixtures/$m/ref.safetensors" \
      --prompt-name greedy_prompt --max-new-tokens 16 --greedy \
      --out "$work/$m.gen.safetensors" 2>/dev/null
    "$bin/hybrid-run" compare "$work/$m.gen.safetensors" "$fixtures/$m/ref.safetensors" \
      --name tokens=greedy_tokens --atol 0
  done

  echo
  echo "== training and generation on one weight store (gpt2 fixture, SFT on its two sequences)"
  # The training executables join forward/prefill/decode in one bundle.
  "$bin/hybridc" compile "$fixtures/gpt2" --train -o "$work/gpt2-train.hyb" -q 2>/dev/null
  python3 - "$fixtures/gpt2/ref.safetensors" "$work/tokens.safetensors" <<'PY'
import sys
sys.path.insert(0, "test/lit/Inputs")
import safetensors_io as st
st.write(sys.argv[2], {"input_ids": st.read(sys.argv[1])["input_ids"]})
PY
  "$bin/hybrid-run" train "$work/gpt2-train.hyb" --weights "$fixtures/gpt2" \
    --allow-extra lm_head.weight --config examples/train/ds_config.json \
    --data "$work/tokens.safetensors" --steps 20 --save "$work/sft"
  echo "greedy continuation of the first training sequence's first 8 tokens, before and after:"
  python3 - "$fixtures/gpt2/ref.safetensors" "$work/prompt.safetensors" <<'PY'
import sys, struct
sys.path.insert(0, "test/lit/Inputs")
import safetensors_io as st
ids = st.read(sys.argv[1])["input_ids"]
row = st.values(ids)[:8]
st.write(sys.argv[2], {"input_ids": st.pack("I64", [1, 8], row)})
print("  data:   ", st.values(ids)[8:16])
PY
  for w in "$fixtures/gpt2" "$work/sft"; do
    "$bin/hybrid-run" generate "$work/gpt2-train.hyb" --weights "$w" \
      --allow-extra lm_head.weight --prompt "$work/prompt.safetensors" \
      --max-new-tokens 8 --out "$work/cont.safetensors" 2>/dev/null
    python3 -c "
import sys; sys.path.insert(0, 'test/lit/Inputs'); import safetensors_io as st
print('  %-8s' % sys.argv[2], st.values(st.read(sys.argv[1])['tokens']))" \
      "$work/cont.safetensors" "$([ "$w" = "$work/sft" ] && echo after: || echo before:)"
  done

  echo
  echo "== one PPO step (DeepSpeed-Chat's step 3: actor, reference, critic, reward) against its oracle"
  for m in gpt2 llama; do
    "$bin/hybrid-rlhf" ppo-step --actor "$fixtures/$m" \
      --value-models "$fixtures/ppo/ppo_${m}_value_models.safetensors" \
      --experience "$fixtures/ppo/ppo_$m.safetensors" --out "$work/ppo-$m.safetensors" 2>&1 |
      grep -v "compiling\|experience of"
    python3 test/lit/e2e/Inputs/check_ppo.py "$work/ppo-$m.safetensors" \
      "$fixtures/ppo/ppo_$m.safetensors" | sed 's/^/  /'
  done
else
  echo "(no fixtures at $fixtures: skipping the parity check)"
fi

echo
echo "== GPT-2 124M shape, random weights, CPU float32 forward"
"$bin/hybridc" compile examples/models/gpt2-124m -o "$work/gpt2-124m.hyb"
"$bin/hybrid-run" info "$work/gpt2-124m.hyb"
for shape in "1 128" "4 128"; do
  set -- $shape
  "$bin/hybrid-run" forward "$work/gpt2-124m.hyb" --random-weights 0 \
    --batch "$1" --seq "$2" --repeat 3
done

echo
echo "== GPT-2 124M shape, random weights, CPU float32 generation (KV cache)"
for batch in 1 4; do
  "$bin/hybrid-run" generate "$work/gpt2-124m.hyb" --random-weights 0 \
    --batch "$batch" --prompt-len 128 --max-new-tokens 64 --repeat 2
done

if [ -d "$fixtures" ]; then
  echo
  echo "== RLHF on the gpt2 fixture: DeepSpeed-Chat's three steps (hybrid-rlhf step1, step2, step3)"
  # Toy data in token ids (tools/hybrid-rlhf/tokenize_jsonl.py makes them
  # from text): SFT answers, pairs whose chosen answer holds the id 36,
  # prompts. The fixture's EOS (50256) lies outside its 512-token
  # vocabulary, so answers run to their length.
  data=test/lit/e2e/Inputs/rlhf_data.py
  python3 $data sft "$work/sft.jsonl" 64 512
  python3 $data pairs "$work/pairs.jsonl" 512 512
  python3 $data pairs "$work/pairs-eval.jsonl" 32 512 --seed 3
  python3 $data prompts "$work/prompts.jsonl" 64 512
  echo "-- step 1: supervised fine-tuning (the loss on the answers)"
  "$bin/hybrid-rlhf" step1 --model_name_or_path "$fixtures/gpt2" \
    --data_path "$work/sft.jsonl" --output_dir "$work/step1" \
    --per_device_train_batch_size 8 --num_train_epochs 4 --learning_rate 1e-3 2>/dev/null |
    grep -E '^step (1|32)/|^sample|^hybrid-rlhf' | sed 's/^/  /'
  echo "-- step 2: the reward model (chosen above rejected; held-out accuracy)"
  "$bin/hybrid-rlhf" step2 --model_name_or_path "$fixtures/gpt2" \
    --data_path "$work/pairs.jsonl" --eval_data_path "$work/pairs-eval.jsonl" \
    --output_dir "$work/step2" --per_device_train_batch_size 16 \
    --num_train_epochs 4 --learning_rate 1e-3 --weight_decay 0 2>/dev/null | sed 's/^/  /'
  echo "-- step 3: PPO, the step-1 model as actor, the step-2 model as critic and reward"
  "$bin/hybrid-rlhf" step3 --actor_model_name_or_path "$work/step1" \
    --critic_model_name_or_path "$work/step2" --data_path "$work/prompts.jsonl" \
    --output_dir "$work/step3" --max_prompt_seq_len 8 --max_answer_seq_len 16 \
    --per_device_generation_batch_size 16 --per_device_training_batch_size 4 \
    --ppo_epochs 2 --max_iterations 30 --actor_learning_rate 3e-4 \
    --critic_learning_rate 3e-3 --kl_ctl 0.01 --eos_token_id -1 --pad_token_id 0 2>/dev/null |
    awk 'NR % 5 == 1 || /^hybrid-rlhf/' | sed 's/; generate.*//; s/^/  /'
  python3 test/lit/e2e/Inputs/check_trend.py "$work/step3/metrics.jsonl" --window 10 --rise 1 |
    sed 's/^/  /'
fi
