#!/usr/bin/env bash
# Run here (where LLVM/MLIR and FlatBuffers are): compiles the bundles the
# GPU host runs and stages the device kit. Carry BUILD/device-kit and
# BUILD/device-bundles to the GPU host, then run test/gpu/run.sh there.
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
  "$build/bin/hybridc" compile "$fixtures/$m" --dtype=bfloat16 -o "$out/$m/hf-bf16.hyb" -q
  "$build/bin/hybridc" compile "$fixtures/$m/model.onnx" -o "$out/$m/onnx.hyb" -q
done
"$build/bin/hybridc" compile examples/models/gpt2-124m -o "$out/gpt2-124m.hyb" -q
echo "staged $build/device-kit and $out"
