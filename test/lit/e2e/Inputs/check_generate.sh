#!/usr/bin/env bash
# Greedy generation from a fixture's greedy_prompt (16 new tokens) against
# HF's greedy_tokens, then the log-probs of those tokens against a float64
# log-softmax of the full-sequence forward logits (prompt + tokens).
# usage: check_generate.sh MODEL WEIGHTS REF SCRATCH_PREFIX
#   MODEL: what hybridc compiles (a fixture folder or its model.onnx)
#   WEIGHTS: what hybrid-run loads; REF: the fixture's ref.safetensors
set -euo pipefail
model=$1 weights=$2 ref=$3 tmp=$4
here=$(dirname "$0")
hybridc compile "$model" -o "$tmp.hyb" -q
hybrid-run generate "$tmp.hyb" --weights "$weights" --allow-extra lm_head.weight \
  --prompt "$ref" --prompt-name greedy_prompt --max-new-tokens 16 --greedy \
  --out "$tmp.gen.safetensors" 2>/dev/null
python3 "$here/generation.py" tokens "$tmp.gen.safetensors" "$ref" greedy_tokens
python3 "$here/generation.py" sequence "$ref" greedy_prompt \
  "$tmp.gen.safetensors" "$tmp.seq.safetensors"
hybrid-run forward "$tmp.hyb" --weights "$weights" --allow-extra lm_head.weight \
  --inputs "$tmp.seq.safetensors" --out "$tmp.fwd.safetensors" 2>/dev/null
python3 "$here/generation.py" logprobs "$tmp.gen.safetensors" \
  "$tmp.fwd.safetensors" 8 --atol 1e-4
