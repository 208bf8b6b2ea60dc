#!/usr/bin/env bash
# Samples (temperature 1, two seeds) after three prompts left-padded into
# one batch and after each prompt alone, with a bundle compiled with
# --train, and compares generation's log-probs with @logprobs on prompt +
# answer (hybrid-run generate --check-logprobs): within ATOL (0: the same
# bits). One line per run.
# usage: check_logprobs_parity.sh FIXTURE_DIR ATOL SCRATCH_DIR
set -euo pipefail
fixture=$1 atol=$2 tmp=$3
here=$(dirname "$0")
mkdir -p "$tmp"
hybridc compile "$fixture" --train -o "$tmp/model.hyb" -q
python3 "$here/generation.py" padded-batch "$fixture/ref.safetensors" \
  greedy_prompt "$tmp"
for prompt in batch row0 row1 row2; do
  for seed in 1 2; do
    echo -n "$prompt seed $seed: "
    hybrid-run generate "$tmp/model.hyb" --weights "$fixture" \
      --allow-extra lm_head.weight --max-new-tokens 24 \
      --prompt "$tmp/$prompt.safetensors" --temperature 1 --seed $seed \
      --check-logprobs --logprobs-atol "$atol"
  done
done
