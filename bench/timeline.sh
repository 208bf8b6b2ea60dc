#!/usr/bin/env bash
# Run on the GPU host from the checkout's root, with BUILD/device-kit and
# BUILD/device-bundles carried (test/gpu/prepare.sh, bench/prepare.sh):
# builds hybrid-run with the kernel timeline (-DHYBRIDC_CUDA_TIMELINE=ON, in
# its own build folder: the normal build's kernels carry none of it), runs
# each named bundle's decode at BATCH with HYBRID_CUDA_TIMELINE, and prints
# bench/timeline.py's table per bundle (the full tables land in $OUT).
#   bench/timeline.sh BUILD BATCH BUNDLE.hyb ...
# e.g. bench/timeline.sh build 1 build/device-bundles/bench/opt-1.3b.hyb
# ENV="VAR=x ..." sets kernel switches for the runs (HYBRID_CUDA_STREAM,
# HYBRID_CUDA_OMIT, ...); ARGS replaces the generation flags.
set -uo pipefail
build=$1 batch=$2
shift 2
out=${OUT:-/tmp/hybridc-timeline} dir=/tmp/hybridc-gpu-timeline
mkdir -p "$out"
[ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] &&
  export CUDACXX=/usr/local/cuda/bin/nvcc
cmake -S . -B $dir -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYBRIDC_ENABLE_COMPILER=OFF \
  -DHYBRIDC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DHYBRIDC_CUDA_TIMELINE=ON \
  -DHYBRIDC_DEVICE_KIT="$PWD/$build/device-kit" > "$out/configure.log" 2>&1 ||
  { tail -20 "$out/configure.log"; exit 1; }
ninja -C $dir -j"$(nproc)" hybrid-run > "$out/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$out/build.log" | head -20; exit 1; }
args=${ARGS:---prompt-len 128 --max-new-tokens 128 --repeat 2}
rc=0
for bundle in "$@"; do
  name=$(basename "$bundle" .hyb)-b$batch
  # shellcheck disable=SC2086 # ENV and args are word lists
  env ${ENV:-} HYBRID_CUDA_TIMELINE="$out/$name.csv" timeout 300 $dir/bin/hybrid-run \
    generate "$bundle" --random-weights 1 --device cuda --batch "$batch" $args \
    > "$out/$name.log" 2>&1 || { echo "$name: generate failed:"; tail -3 "$out/$name.log"; rc=1; continue; }
  grep -oE 'decode [0-9.]+ ms/step, [0-9.]+ tokens/s|graph of [0-9]+ [a-z ]+' "$out/$name.log" |
    tr '\n' ' ' | sed "s/^/$name: /"; echo
  python3 bench/timeline.py "$out/$name.csv" > "$out/$name.txt" || rc=1
  sed -n '1p;/by launch shape/,$p' "$out/$name.txt"
done
exit $rc
