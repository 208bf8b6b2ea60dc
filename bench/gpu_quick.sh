#!/usr/bin/env bash
# Run on the GPU host from the checkout's root, with BUILD/device-kit and
# BUILD/device-bundles carried (test/gpu/prepare.sh and bench/prepare.sh
# here): builds only hybrid-run and the CUDA kernel tests (~90 s on 16
# cores, against test/gpu/run.sh's full build and every test), then runs
# each COMMAND with
#   HYBRID_RUN  the fresh hybrid-run (bench/decode_variants.sh reads it),
#   KERNEL_TESTS the fresh hybrid_cuda_kernel_tests,
#   BUNDLES     BUILD/device-bundles/bench.
# For a device call that measures a change: the kernels' tests and a few
# decode variants in one go, e.g.
#   bench/gpu_quick.sh build \
#     '$KERNEL_TESTS --gtest_brief=1 --gtest_filter=AttentionTest.*' \
#     'bench/decode_variants.sh $BUNDLES/opt-1.3b.hyb 1 base w4:HYBRID_CUDA_DECODE_WARPS=4'
# EXTRA_CMAKE adds configure flags (e.g. -DHYBRIDC_CUDA_TIMELINE=ON);
# OUT_DIR names the build folder (default /tmp/hybridc-gpu-quick).
# PREBUILT=1 builds nothing: it unpacks BUILD/gpu-bins/bins.tar.xz, the
# binaries bench/pack_gpu_bins.sh packed where the build is (carry
# BUILD/gpu-bins too), and prints their stamp (the commit they are of).
set -uo pipefail
build=${1:?usage: bench/gpu_quick.sh BUILD COMMAND...}
shift
out=${OUT_DIR:-/tmp/hybridc-gpu-quick}
kit=$PWD/$build/device-kit bundles=$PWD/$build/device-bundles
start=$SECONDS
if [ "${PREBUILT:-0}" = 1 ]; then
  packed=$PWD/$build/gpu-bins/bins.tar.xz
  [ -f "$packed" ] || { echo "no $packed: run bench/pack_gpu_bins.sh $build where the build is, and carry $build/gpu-bins"; exit 1; }
  mkdir -p "$out/bin" && tar -C "$out/bin" -xJf "$packed" || { echo "cannot unpack $packed"; exit 1; }
  echo "prebuilt binaries, $(head -1 "$out/bin/STAMP"), unpacked in $((SECONDS - start)) s"
else
  [ -d "$kit" ] || { echo "no $kit: run test/gpu/prepare.sh $build where hybridc is built, and carry it"; exit 1; }
  [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] &&
    export CUDACXX=/usr/local/cuda/bin/nvcc
  # shellcheck disable=SC2086 # EXTRA_CMAKE is a word list
  cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYBRIDC_ENABLE_COMPILER=OFF \
    -DHYBRIDC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 ${EXTRA_CMAKE:-} \
    -DHYBRIDC_DEVICE_KIT="$kit" -DHYBRIDC_FIXTURES_DIR="$bundles" > "$out.configure.log" 2>&1 ||
    { tail -30 "$out.configure.log"; exit 1; }
  ninja -C "$out" -j"$(nproc)" hybrid-run hybrid_cuda_kernel_tests > "$out.build.log" 2>&1 ||
    { grep -E "error|FAILED" "$out.build.log" | head -30; exit 1; }
  echo "built in $((SECONDS - start)) s"
fi
export HYBRID_RUN=$out/bin/hybrid-run KERNEL_TESTS=$out/bin/hybrid_cuda_kernel_tests
export BUNDLES=$bundles/bench
rc=0
for command in "$@"; do
  echo "== $command"
  bash -c "$command" || rc=1
done
exit $rc
