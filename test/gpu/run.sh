#!/usr/bin/env bash
# Run on the GPU host (no LLVM/MLIR, no FlatBuffers): builds the runtime,
# kernels and hybrid-run with the compiler off from the device kit, runs
# their tests, checks that bundles compiled elsewhere reproduce HF's logits,
# and times the CPU forward. (CUDA tests join here with the CUDA backend.)
set -euo pipefail
build=${1:-build}
kit=$PWD/$build/device-kit bundles=$PWD/$build/device-bundles out=/tmp/hybridc-gpu-host
cmake -S . -B $out -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYBRIDC_ENABLE_COMPILER=OFF \
  -DHYBRIDC_DEVICE_KIT=$kit -DHYBRIDC_FIXTURES_DIR=$bundles > $out.configure.log 2>&1 ||
  { tail -30 $out.configure.log; exit 1; }
ninja -C $out > $out.build.log 2>&1 || { grep -E "error|FAILED" $out.build.log | head -30; exit 1; }
if ldd $out/bin/hybrid-run | grep -qiE 'llvm|mlir'; then echo "hybrid-run links LLVM" >&2; exit 1; fi
(cd $out && ctest -j"$(nproc)" 2>&1 | tail -3)
if [ ! -d "$bundles" ]; then
  echo "SKIPPED: parity and timing: no $bundles (stage it with test/gpu/prepare.sh)"
  exit 0
fi
for m in gpt2 opt llama; do
  for src in hf onnx; do
    w=$bundles/$m/model.safetensors; [ $src = onnx ] && w=$bundles/$m/model.onnx
    $out/bin/hybrid-run forward $bundles/$m/$src.hyb --weights $w \
      --inputs $bundles/$m/ref.safetensors --out $out/logits.safetensors 2>/dev/null
    printf '%-6s %-5s ' $m $src
    $out/bin/hybrid-run compare $out/logits.safetensors $bundles/$m/ref.safetensors --name logits --atol 1e-3
  done
done
for shape in "1 128" "8 128"; do
  set -- $shape
  $out/bin/hybrid-run forward $bundles/gpt2-124m.hyb --random-weights 0 --batch $1 --seq $2 --repeat 3
done
