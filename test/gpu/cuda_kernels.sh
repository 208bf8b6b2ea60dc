#!/usr/bin/env bash
# Run on the GPU host from the repository root of a plain checkout: builds
# only the kernel targets (hybrid_kernels_cpu, hybrid_kernels_cuda,
# hybrid_cuda_kernel_tests) and runs every CUDA kernel against the CPU
# oracle, then prints a summary.
#
# Needs: the CUDA toolkit (nvcc on PATH or in /usr/local/cuda/bin), CMake
# >= 3.20, ninja, a C++17 compiler, GTest and nlohmann_json (as the
# CPU kernel tests do). Needs no LLVM/MLIR and no FlatBuffers: it configures
# with -DHYBRIDC_KERNELS_ONLY=ON (no runtime, tools or compiler), so no
# device kit either.
#
# Usage: test/gpu/cuda_kernels.sh [build-dir] [extra gtest flags...]
set -euo pipefail
out=${1:-/tmp/hybridc-cuda-kernels}
shift || true
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$nvcc" --version | tail -2
echo "== configure ($out)"
cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DHYBRIDC_ENABLE_COMPILER=OFF -DHYBRIDC_KERNELS_ONLY=ON \
  -DHYBRIDC_ENABLE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
  > "$out.configure.log" 2>&1 || { tail -30 "$out.configure.log"; exit 1; }
echo "== build"
start=$(date +%s)
ninja -C "$out" hybrid_kernels_cpu hybrid_kernels_cuda hybrid_cuda_kernel_tests \
  > "$out.build.log" 2>&1 || { grep -E "error|FAILED" "$out.build.log" | head -40; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
echo "== CUDA kernel tests"
set +e
"$out/bin/hybrid_cuda_kernel_tests" --gtest_brief=1 "$@" 2>&1 | tee "$out.test.log"
rc=${PIPESTATUS[0]}
set -e
echo "== summary"
grep -E "^\[==========\]|^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \]|no CUDA device" "$out.test.log" || true
case $rc in
  0) echo "CUDA kernel tests: all passed" ;;
  77) echo "CUDA kernel tests: skipped (no CUDA device)" ;;
  *) echo "CUDA kernel tests: FAILED (exit $rc)" ;;
esac
exit $rc
