#!/usr/bin/env bash
# DeepSpeed-Chat's step 3 on the GPU host, as ../shared/bench/
# anchor_dschat_step3.py measures it (run_1.3b.sh's single-GPU settings):
# actor OPT-1.3B, critic and reward OPT-350m (random weights), 16 prompts of
# 256 tokens -> 256 answer tokens, greedy (dschat's generate), per-device
# training batch 16, bf16, the KV cache kept (and a second run releasing
# it). Prints hybrid-rlhf's per-iteration lines and one summary line a run:
# the median iteration after 2 warm-up ones, its phases and the peak.
#   bench/rlhf_step3.sh HYBRID_RLHF BUNDLES [ITERATIONS (default 6)]
# BUNDLES: bench/prepare.sh's build/device-bundles/bench.
set -uo pipefail
rlhf=${1:?usage: bench/rlhf_step3.sh HYBRID_RLHF BUNDLES [ITERATIONS]}
bundles=${2:?usage: bench/rlhf_step3.sh HYBRID_RLHF BUNDLES [ITERATIONS]}
iterations=${3:-6}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for extra in "" "--release_inference_cache"; do
  "$rlhf" step3 --actor-bundle "$bundles/opt-1.3b-rlhf-actor.hyb" \
    --critic-bundle "$bundles/opt-350m-rlhf-critic.hyb" --random-weights 1 \
    --data_path "$bundles/rlhf-prompts.jsonl" --output_dir "$out/run" \
    --per_device_generation_batch_size 16 --per_device_training_batch_size 16 \
    --max_prompt_seq_len 256 --max_answer_seq_len 256 --greedy \
    --eos_token_id -1 --pad_token_id 1 --max_iterations "$iterations" \
    --device cuda $extra 2> "$out/err" | grep -E "^iteration|^hybrid-rlhf" ||
    { tail -5 "$out/err"; exit 1; }
  python3 - "$out/run/metrics.jsonl" "${extra:-keep cache}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][2:]
med = lambda k: statistics.median(r[k] for r in rows)
print("step3 OPT-1.3B + OPT-350m (%s): iteration %.3f s (generate %.3f, "
      "experience %.3f, train %.3f), median of %d after 2 warm-up; peak %.2f GiB"
      % (sys.argv[2], med("total_s"), med("generate_s"), med("experience_s"),
         med("train_s"), len(rows), max(r["peak_gib"] for r in rows)))
PY
  rm -rf "$out/run"
done
