#!/usr/bin/env bash
# Compiles one exported model through both frontends (the .onnx file with
# its initializers, and config.json with model.safetensors), runs each on the
# CPU runtime and compares the logits with HF's (max abs diff <= 1e-3).
# usage: check.sh MODEL_DIR SCRATCH_PREFIX
set -euo pipefail
dir=$1 tmp=$2
hybridc compile "$dir/model.onnx" -o "$tmp.onnx.hyb" -q 2>/dev/null
hybrid-run forward "$tmp.onnx.hyb" --weights "$dir/model.onnx" \
  --inputs "$dir/ref.safetensors" --out "$tmp.onnx.safetensors" 2>/dev/null
echo -n "onnx "
hybrid-run compare "$tmp.onnx.safetensors" "$dir/ref.safetensors" --name logits --atol 1e-3
hybridc compile "$dir" -o "$tmp.hf.hyb" -q
hybrid-run forward "$tmp.hf.hyb" --weights "$dir/model.safetensors" \
  --inputs "$dir/ref.safetensors" --out "$tmp.hf.safetensors" 2>/dev/null
echo -n "hf "
hybrid-run compare "$tmp.hf.safetensors" "$dir/ref.safetensors" --name logits --atol 1e-3
