#!/usr/bin/env bash
# Run here, where the CUDA build is (BUILD, sm_90): packs stripped copies of
# hybrid-run and hybrid_cuda_kernel_tests into BUILD/gpu-bins/bins.tar.xz
# (~16 MB for ~80 MB of binaries) with a stamp naming the commit they were
# built from, so that bench/gpu_quick.sh on the GPU host can run them
# instead of building (PREBUILT=1; ~90 s of device time a call). Carry
# BUILD/gpu-bins beside BUILD/device-kit and BUILD/device-bundles.
# Built here they need only the CUDA runtime and cuBLASLt there (seen
# working on the H200 host: Ubuntu 24.04, CUDA 13).
#   bench/pack_gpu_bins.sh BUILD
set -euo pipefail
build=${1:?usage: bench/pack_gpu_bins.sh BUILD}
out=$build/gpu-bins
for b in hybrid-run hybrid_cuda_kernel_tests; do
  [ -x "$build/bin/$b" ] || { echo "no $build/bin/$b: build it first (ninja -C $build $b)"; exit 1; }
done
if ldd "$build/bin/hybrid-run" | grep -qiE 'llvm|mlir'; then
  echo "$build/bin/hybrid-run links LLVM: it would not run on the GPU host"; exit 1
fi
ldd "$build/bin/hybrid-run" | grep -q libcudart ||
  { echo "$build/bin/hybrid-run has no CUDA backend (configure with CUDA on)"; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
strip -o "$stage/hybrid-run" "$build/bin/hybrid-run"
strip -o "$stage/hybrid_cuda_kernel_tests" "$build/bin/hybrid_cuda_kernel_tests"
{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "packed $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
} > "$stage/STAMP"
mkdir -p "$out"
tar -C "$stage" -cf - STAMP hybrid-run hybrid_cuda_kernel_tests | xz -6 -T2 > "$out/bins.tar.xz"
echo "packed $out/bins.tar.xz ($(du -h "$out/bins.tar.xz" | cut -f1)): $(head -1 "$stage/STAMP")"
