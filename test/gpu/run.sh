#!/usr/bin/env bash
# Run on the GPU host (an H200 with CUDA 13, cmake, ninja, g++; no LLVM/MLIR,
# no FlatBuffers) from the checkout's root, with BUILD/device-kit and
# BUILD/device-bundles carried from where test/gpu/prepare.sh ran: builds the
# runtime, kernels and hybrid-run with CUDA (sm_90) and the compiler off, runs
# every test (CPU and CUDA), checks that bundles compiled elsewhere reproduce
# HF's logits on the CPU and the GPU (f32 within 1e-3; bf16 bundles within
# 2e-2 / 3e-2 of the largest logit of the f32 bundle on the same GPU and
# weights), that greedy generation on the GPU gives HF's tokens (and the
# CPU's log-probs), that a training step on the GPU gives HF's loss,
# gradients and updated logits (f32; bf16 within stated bounds) and the
# CPU's, that `hybrid-run train` gives the CPU's losses, that the PPO-shaped
# step runs (switches moving no byte), and times GPT-2 124M's forward and
# training step.
# One line per check; exits 1 if any failed.
set -uo pipefail
build=${1:-build}
kit=$PWD/$build/device-kit bundles=$PWD/$build/device-bundles out=/tmp/hybridc-gpu-host
jobs=$(nproc)
failures=0
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
# A CUDA toolkit outside PATH is still found.
[ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] &&
  export CUDACXX=/usr/local/cuda/bin/nvcc

cmake -S . -B $out -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYBRIDC_ENABLE_COMPILER=OFF \
  -DHYBRIDC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DHYBRIDC_DEVICE_KIT=$kit -DHYBRIDC_FIXTURES_DIR=$bundles > $out.configure.log 2>&1 ||
  { tail -30 $out.configure.log; exit 1; }
start=$SECONDS
ninja -C $out -j$jobs > $out.build.log 2>&1 || { grep -E "error|FAILED" $out.build.log | head -30; exit 1; }
echo "built in $((SECONDS - start)) s"
if ldd $out/bin/hybrid-run | grep -qiE 'llvm|mlir'; then fail "hybrid-run links LLVM"; fi
ldd $out/bin/hybrid-run | grep -q libcudart || fail "hybrid-run is not linked with the CUDA runtime"

# Every test, CPU and CUDA. On this host no CUDA test may skip for want of a GPU.
start=$SECONDS
(cd $out && ctest -j"$jobs" --output-on-failure > $out.ctest.log 2>&1)
ctest_rc=$?
grep -E "tests passed|tests failed" $out.ctest.log
grep -E "\*\*\*Failed|\(Failed\)|\(Timeout\)|\[  FAILED  \]|Failure$" $out.ctest.log | head -20
[ $ctest_rc -eq 0 ] && echo "ok    ctest ($((SECONDS - start)) s)" || fail "ctest (log: $out.ctest.log)"
skipped=$(grep -c "no CUDA device: skipped\|CUDA backend not built: skipped" $out/Testing/Temporary/LastTest.log)
[ "$skipped" -eq 0 ] && echo "ok    no CUDA test skipped" || fail "$skipped CUDA tests skipped on the GPU host"

if [ ! -d "$bundles" ]; then
  echo "SKIPPED: parity and timing: no $bundles (stage it with test/gpu/prepare.sh)"
  [ $failures -eq 0 ]; exit
fi

# forward NAME BUNDLE WEIGHTS DEVICE OUT: runs the fixture's input_ids.
forward() {
  local name=$1 bundle=$2 weights=$3 device=$4 logits=$5 err
  err=$($out/bin/hybrid-run forward "$bundle" --weights "$weights" --device "$device" \
    --inputs "$(dirname "$bundle")/ref.safetensors" --out "$logits" 2>&1) ||
    { fail "$name: $err"; return 1; }
}
# compare NAME A B ARGS...: one summary line from hybrid-run compare.
compare() {
  local name=$1 a=$2 b=$3 line
  shift 3
  if line=$($out/bin/hybrid-run compare "$a" "$b" --name logits "$@" 2>/dev/null); then
    echo "ok    $name: $line"
  else
    fail "$name: $line"
  fi
}
# check NAME CMD...: one line, "ok    NAME: CMD's output" or a FAIL line.
check() {
  local name=$1 line
  shift
  if line=$("$@" 2>&1); then
    echo "ok    $name: $(echo "$line" | paste -sd ';' | sed 's/;/; /g')"
  else
    fail "$name: $(echo "$line" | paste -sd ';' | sed 's/;/; /g')"
  fi
}

for m in gpt2 opt llama; do
  for src in hf onnx; do
    w=$bundles/$m/model.safetensors; [ $src = onnx ] && w=$bundles/$m/model.onnx
    for dev in cpu cuda; do
      o=$out/$m-$src-$dev.safetensors
      forward "$m $src $dev" $bundles/$m/$src.hyb $w $dev $o &&
        compare "$m $src f32 $dev vs HF" $o $bundles/$m/ref.safetensors --atol 1e-3
    done
  done
  # bf16 on the GPU: the bf16 and the f32 bundle on the same bf16-rounded
  # weights. HF's own bf16 forward is 2.1 % (gpt2) and 3.3 % (llama) from
  # its f32 one on these fixtures (bench/RESULTS.md), hence 3e-2 for those.
  rtol=3e-2; [ $m = opt ] && rtol=2e-2
  if [ -f $bundles/$m/hf-bf16.hyb ] && [ -f $bundles/$m/model-bf16.safetensors ]; then
    w=$bundles/$m/model-bf16.safetensors
    forward "$m hf f32 cuda (bf16 weights)" $bundles/$m/hf.hyb $w cuda $out/$m-f32r-cuda.safetensors &&
      forward "$m hf bf16 cuda" $bundles/$m/hf-bf16.hyb $w cuda $out/$m-bf16-cuda.safetensors &&
      compare "$m hf bf16 cuda vs f32 cuda" $out/$m-bf16-cuda.safetensors \
        $out/$m-f32r-cuda.safetensors --rtol-max $rtol
  else
    fail "$m: no hf-bf16.hyb or model-bf16.safetensors staged (run test/gpu/prepare.sh again)"
  fi
done

# Greedy generation on the GPU (decode captured as a CUDA graph): the tokens
# are HF's greedy_tokens, and the log-probs those of the CPU within 1e-4.
for m in gpt2 opt llama; do
  for src in hf onnx; do
    w=$bundles/$m/model.safetensors; [ $src = onnx ] && w=$bundles/$m/model.onnx
    for dev in cpu cuda; do
      err=$($out/bin/hybrid-run generate $bundles/$m/$src.hyb --weights "$w" \
        --allow-extra lm_head.weight --device $dev --prompt $bundles/$m/ref.safetensors \
        --prompt-name greedy_prompt --max-new-tokens 16 --greedy \
        --out $out/$m-$src-$dev.gen.safetensors 2>&1) || fail "$m $src generate $dev: $err"
    done
    if line=$($out/bin/hybrid-run compare $out/$m-$src-cuda.gen.safetensors \
        $bundles/$m/ref.safetensors --name tokens=greedy_tokens --atol 0 2>/dev/null); then
      echo "ok    $m $src cuda greedy tokens = HF: $line"
    else
      fail "$m $src cuda greedy tokens: $line"
    fi
    if line=$($out/bin/hybrid-run compare $out/$m-$src-cuda.gen.safetensors \
        $out/$m-$src-cpu.gen.safetensors --name logprobs --atol 1e-4 2>/dev/null); then
      echo "ok    $m $src cuda log-probs vs cpu: $line"
    else
      fail "$m $src cuda log-probs vs cpu: $line"
    fi
  done
done

# Generation's log-probs against the training graph's (@logprobs on prompt
# + sampled answer, hybrid-run generate --check-logprobs; the CPU gives the
# same bits, test/lit/e2e/generate-logprobs-parity.test): gpt2's f32 bundle
# on the CPU (0) and the GPU (within 1e-4), and its bf16 bundle when staged,
# whose difference is reported, not bounded (decode and the full forward
# round bf16 products in other orders).
python3 test/lit/e2e/Inputs/generation.py padded-batch $bundles/gpt2/ref.safetensors \
  greedy_prompt $out >/dev/null
for run in "f32 cpu train 0" "f32 cuda train 1e-4" "bf16 cuda train-gen-bf16 -"; do
  set -- $run
  [ -f $bundles/gpt2/$3.hyb ] || { echo "SKIPPED: gpt2 logprobs $1 $2: no $3.hyb staged"; continue; }
  atol=(); [ "$4" != - ] && atol=(--logprobs-atol "$4")
  for prompt in batch row2; do
    check "gpt2 logprobs $1 $2 generate vs @logprobs ($prompt)" $out/bin/hybrid-run generate \
      $bundles/gpt2/$3.hyb --weights $bundles/gpt2/model.safetensors --allow-extra lm_head.weight \
      --device $2 --prompt $out/$prompt.safetensors --max-new-tokens 24 --temperature 1 \
      --seed 1 --check-logprobs "${atol[@]}"
  done
done

# Training (bundles compiled with hybridc --train): every training
# executable runs on the GPU (@train_step, @forward_loss,
# @forward_loss_grad, @logprobs, @backward; @forward_backward and @step
# under `hybrid-run train`). One step of each fixture (AdamW lr 1e-3,
# betas 0.9, 0.95, eps 1e-8, weight decay 0.01) on the CPU and the GPU. f32: loss within 1e-5 relative, every gradient within 1e-3
# relative L2, the logits after the step within 1e-3, of HF's (as
# test/lit/e2e/train-step.test checks the CPU), and the GPU's loss and
# gradients within the same bounds of the CPU's. bf16 (weights rounded on
# load, f32 masters): against HF's f32 step, the loss within 3e-3 relative,
# gradients within 0.25 relative L2 (gradients that are zero in exact
# arithmetic below 1e-2 of the largest), the logits after within 0.15 of
# their largest, and the masters as torch's AdamW makes them from the
# bf16-rounded weights (check_masters.py, as the CPU lit test); the CPU's
# own bf16 error, measured on these fixtures, is loss <= 9.2e-4, gradients
# <= 0.13, zero gradients <= 1.2e-3, logits after <= 0.093. Then 10 steps
# of `hybrid-run train` on each device: the same losses within 1e-4
# relative in f32, 5e-2 in bf16 (bf16 roundings that differ between the
# devices compound over the steps, and which GEMM kernel each product runs
# is timed per run, so the summation orders vary too: on the H200 the
# llama fixture's step-10 difference ranged 1.4e-2 to 3.6e-2 over four
# equally valid kernel choices — cuBLASLt only, skinny where it times
# faster with and without early weight loads, skinny wherever it applies;
# gpt2 8.5e-3 to 1.6e-2, opt 1.3e-2 to 2.7e-2; f32 stays within 2.1e-6).
step_args="--lr 1e-3 --betas 0.9,0.95 --eps 1e-8 --weight-decay 0.01"
for m in gpt2 opt llama; do
  ref=$bundles/$m/ref.safetensors
  for dt in f32 bf16; do
    b=$bundles/$m/train.hyb
    [ $dt = bf16 ] && b=$bundles/$m/train-bf16.hyb
    ran=1
    for dev in cpu cuda; do
      err=$($out/bin/hybrid-run train-step $b --weights $bundles/$m/model.safetensors \
        --allow-extra lm_head.weight --inputs $ref $step_args --device $dev \
        --out $out/$m-train-$dt-$dev.safetensors 2>&1) ||
        { fail "$m train-step $dt $dev: $err"; ran=0; }
    done
    [ $ran = 1 ] || continue
    o=$out/$m-train-$dt-cuda.safetensors cpu=$out/$m-train-$dt-cpu.safetensors
    if [ $dt = f32 ]; then
      check "$m train-step f32 cuda vs HF" python3 test/lit/e2e/Inputs/check_grads.py $o $ref
      check "$m train-step f32 cuda vs cpu" python3 test/lit/e2e/Inputs/check_grads.py $o $cpu
      check "$m train-step f32 cuda logits after vs HF" $out/bin/hybrid-run compare $o $ref \
        --name logits_after=logits_after_adamw --atol 1e-3
    else
      bounds="--loss-rtol 3e-3 --grad-rel-l2 0.25 --zero-rel 1e-2"
      check "$m train-step bf16 cuda vs HF f32" python3 test/lit/e2e/Inputs/check_grads.py $o $ref $bounds
      check "$m train-step bf16 cuda vs cpu" python3 test/lit/e2e/Inputs/check_grads.py $o $cpu $bounds
      check "$m train-step bf16 cuda masters vs torch AdamW" python3 \
        test/lit/e2e/Inputs/check_masters.py $o $bundles/$m/model.safetensors $ref \
        1e-3 0.9 0.95 1e-8 0.01 0.03
      check "$m train-step bf16 cuda logits after vs HF f32" $out/bin/hybrid-run compare $o $ref \
        --name logits_after=logits_after_adamw --rtol-max 0.15
    fi
  done
  # The other training executables, f32, on the GPU against HF: the loss
  # (@forward_loss), the loss and gradients (@forward_loss_grad), the
  # per-token log-probs (@logprobs: their mean is minus the loss), and
  # @backward from HF's gradient of the logits (as
  # test/lit/e2e/backward.test on the CPU).
  b=$bundles/$m/train.hyb w=$bundles/$m/model.safetensors
  for e in forward_loss forward_loss_grad logprobs; do
    err=$($out/bin/hybrid-run forward $b --executable $e --weights $w --allow-extra lm_head.weight \
      --inputs $ref --device cuda --out $out/$m-$e-cuda.safetensors 2>&1) ||
      { fail "$m $e cuda: $err"; continue; }
    case $e in
      forward_loss) check "$m forward_loss cuda vs HF" python3 test/lit/e2e/Inputs/check_grads.py \
        $out/$m-$e-cuda.safetensors $ref --loss-only ;;
      forward_loss_grad) check "$m forward_loss_grad cuda vs HF" python3 \
        test/lit/e2e/Inputs/check_grads.py $out/$m-$e-cuda.safetensors $ref ;;
      logprobs) check "$m logprobs cuda vs HF" python3 test/lit/e2e/Inputs/train_check.py \
        logprobs-mean $out/$m-$e-cuda.safetensors $ref 1e-5 ;;
    esac
  done
  if err=$($out/bin/hybrid-run backward $b --weights $w --allow-extra lm_head.weight \
      --inputs $bundles/$m/grad_logits.safetensors --device cuda \
      --out $out/$m-backward-cuda.safetensors 2>&1); then
    check "$m backward cuda vs HF" python3 test/lit/e2e/Inputs/check_grads.py \
      $out/$m-backward-cuda.safetensors $ref --grads-only
  else
    fail "$m backward cuda: $err"
  fi
  for dt in f32 bf16; do
    b=$bundles/$m/train.hyb config=test/gpu/ds_train.json rtol=1e-4
    [ $dt = bf16 ] && b=$bundles/$m/train-bf16.hyb config=test/gpu/ds_train_bf16.json rtol=5e-2
    ran=1
    for dev in cpu cuda; do
      $out/bin/hybrid-run train $b --weights $bundles/$m/model.safetensors \
        --allow-extra lm_head.weight --config $config --data $bundles/$m/tokens.safetensors \
        --steps 10 --device $dev 2> $out/$m-train-$dt-$dev.log ||
        { fail "$m train $dt $dev: $(tail -1 $out/$m-train-$dt-$dev.log)"; ran=0; }
    done
    [ $ran = 1 ] && check "$m train $dt cuda vs cpu" python3 test/gpu/compare_losses.py \
      $out/$m-train-$dt-cuda.log $out/$m-train-$dt-cpu.log $rtol
  done
done

# GPT-2 124M forward (random weights, host edge included: ids in, logits out).
for dev in cuda cpu; do
  for shape in "1 128" "8 128"; do
    set -- $shape
    line=$($out/bin/hybrid-run forward $bundles/gpt2-124m.hyb --random-weights 0 --device $dev \
      --batch $1 --seq $2 --repeat 5 2>&1) && echo "time  $dev ${1}x$2: ${line#hybrid-run: }" ||
      fail "gpt2-124m $dev ${1}x$2: $line"
  done
done

# GPT-2 124M training steps (bf16 weights, f32 masters, AdamW; random
# weights; bench/train.py times the benchmark models the same way).
line=$($out/bin/hybrid-run train-step $bundles/gpt2-124m-train-bf16.hyb --random-weights 0 \
  --device cuda --batch 8 --seq 512 --repeat 3 2>&1) &&
  echo "time  cuda train-step 8x512: ${line#hybrid-run: }" ||
  fail "gpt2-124m train-step cuda 8x512: $line"

# The PPO-shaped step on the GPU (hybrid-run ppo-step on the gpt2
# fixture's training bundle, generation kept; test/lit/tools/ppo-step.test
# runs it on the CPU): decode captured or not, the KV cache kept or
# released, switches that move no byte, finite losses.
for extra in "" --release-cache --no-cuda-graph; do
  if line=$($out/bin/hybrid-run ppo-step $bundles/gpt2/train.hyb --random-weights 0 \
      --device cuda --batch 4 --prompt-len 8 --new-tokens 8 --micro-batch 2 --repeat 2 \
      $extra 2>&1) &&
    echo "$line" | grep -qE "switch bytes 0\); generate [0-9]+ tok/s; loss [0-9.]+ -> [0-9.]+;"; then
    echo "ok    gpt2 ppo-step cuda $extra: ${line#hybrid-run: }"
  else
    fail "gpt2 ppo-step cuda $extra: $line"
  fi
done

# DeepSpeed-Chat's PPO step on the GPU (hybrid-rlhf ppo-step, f32; the
# CPU's is test/lit/e2e/ppo-step.test) against the PPO oracles, within
# issue 26's bounds.
for m in gpt2 opt llama; do
  d=$bundles/$m
  if err=$($out/bin/hybrid-rlhf ppo-step --actor $d --actor-bundle $d/ppo-actor.hyb \
      --value-bundle $d/ppo-value.hyb --value-models $d/ppo_${m}_value_models.safetensors \
      --experience $d/ppo_$m.safetensors --out /tmp/ppo-$m.safetensors --device cuda 2>&1) &&
    line=$(python3 test/lit/e2e/Inputs/check_ppo.py /tmp/ppo-$m.safetensors $d/ppo_$m.safetensors); then
    echo "ok    $m ppo-step cuda vs the PPO oracle: $(echo "$line" | tr '\n' ';')"
  else
    fail "$m ppo-step cuda: $err $line"
  fi
done

# DeepSpeed-Chat's step 3 on the GPU (hybrid-rlhf step3, f32): PPO and GRPO
# learn the rule reward of test/lit/e2e/rlhf-learns.test with its settings.
d=$bundles/gpt2
common="--actor_model_name_or_path $d --actor-bundle $d/rlhf-actor.hyb --reward_rule token:36
  --data_path $d/rlhf-prompts.jsonl --max_prompt_seq_len 8 --max_answer_seq_len 16
  --max_iterations 40 --eos_token_id -1 --pad_token_id 0 --device cuda"
for algo in ppo grpo; do
  if [ $algo = ppo ]; then
    args="--critic_model_name_or_path $d --critic-bundle $d/ppo-value.hyb
      --per_device_generation_batch_size 16 --per_device_training_batch_size 4 --ppo_epochs 2
      --actor_learning_rate 3e-4 --critic_learning_rate 3e-3 --kl_ctl 0.01"
  else
    args="--group_size 4 --per_device_generation_batch_size 8
      --per_device_training_batch_size 16 --actor_learning_rate 2e-4"
  fi
  rm -rf /tmp/rlhf-$algo
  # shellcheck disable=SC2086 # word lists
  if err=$($out/bin/hybrid-rlhf step3 --algo $algo $common $args --output_dir /tmp/rlhf-$algo 2>&1 >/dev/null) &&
    line=$(python3 test/lit/e2e/Inputs/check_trend.py /tmp/rlhf-$algo/metrics.jsonl); then
    echo "ok    gpt2 step3 $algo cuda learns: $line"
  else
    fail "gpt2 step3 $algo cuda: $(echo "$err" | tail -2) $line"
  fi
done

[ $failures -eq 0 ] && echo "all GPU checks passed" || echo "$failures GPU check(s) failed"
[ $failures -eq 0 ]
