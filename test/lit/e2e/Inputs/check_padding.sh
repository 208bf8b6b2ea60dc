#!/usr/bin/env bash
# Three prompts of 8, 5 and 3 tokens, left-padded into one batch, generate
# the same tokens (and log-probs within ATOL; 0: the same bits) as each
# prompt alone.
# usage: check_padding.sh FIXTURE_DIR ATOL SCRATCH_DIR
set -euo pipefail
fixture=$1 atol=$2 tmp=$3
here=$(dirname "$0")
mkdir -p "$tmp"
hybridc compile "$fixture" -o "$tmp/model.hyb" -q
python3 "$here/generation.py" padded-batch "$fixture/ref.safetensors" \
  greedy_prompt "$tmp"
gen() {
  hybrid-run generate "$tmp/model.hyb" --weights "$fixture" \
    --allow-extra lm_head.weight --max-new-tokens 12 --prompt "$1" --out "$2" \
    2>/dev/null
}
gen "$tmp/batch.safetensors" "$tmp/batch.out.safetensors"
for r in 0 1 2; do
  gen "$tmp/row$r.safetensors" "$tmp/row$r.out.safetensors"
done
python3 "$here/generation.py" same-rows "$tmp/batch.out.safetensors" \
  "$tmp/row0.out.safetensors" "$tmp/row1.out.safetensors" \
  "$tmp/row2.out.safetensors" --atol "$atol"
