#!/usr/bin/env bash
# On a host with two GPUs (nvidia-h200-x2), from the checkout's root with
# BUILD/device-kit, BUILD/device-bundles/bench and BUILD/anchors carried:
# hybridc's benchmark and the anchors in the same run, spread over both GPUs
# so that all of them fit one 10-minute call (one after another they take
# about 15 minutes). GPU 1 runs the anchors in ANCHORS1 (default
# "compiled eager") from the start; GPU 0 builds hybrid-run (runtime only,
# as test/gpu/run.sh configures it), runs bench/gpu.sh's hybridc part
# (TRAIN=0 by default here; the PPO-shaped step runs unless PPO=0) and then
# the anchors in ANCHORS0 (default "ds").
# Each GPU runs one process at a time, so the figures are those of a GPU to
# itself. Writes everything to $OUT (default /tmp/hybridc-bench); the logs
# of the two halves are gpu0.log and gpu1.log.
set -uo pipefail
build=${1:-build}
out=${OUT:-/tmp/hybridc-bench}
host=/tmp/hybridc-gpu-host
mkdir -p "$out"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "bench/gpu2.sh needs two GPUs"; exit 1; }
(CUDA_VISIBLE_DEVICES=1 HYBRIDC=0 ANCHORS="${ANCHORS1:-compiled eager}" OUT=$out \
  bench/gpu.sh "$build" > "$out/gpu1.log" 2>&1) &
other=$!
[ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] &&
  export CUDACXX=/usr/local/cuda/bin/nvcc
start=$SECONDS
if ! { cmake -S . -B $host -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYBRIDC_ENABLE_COMPILER=OFF \
         -DHYBRIDC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
         -DHYBRIDC_DEVICE_KIT=$PWD/$build/device-kit > $host.configure.log 2>&1 &&
       ninja -C $host hybrid-run > $host.build.log 2>&1; }; then
  echo "FAIL  building hybrid-run"; tail -20 $host.configure.log $host.build.log
else
  echo "built hybrid-run in $((SECONDS - start)) s"
  CUDA_VISIBLE_DEVICES=0 TRAIN=${TRAIN:-0} ANCHORS="${ANCHORS0:-ds}" OUT=$out \
    bench/gpu.sh "$build" > "$out/gpu0.log" 2>&1
fi
wait $other
echo "== GPU 0"; cat "$out/gpu0.log" 2>/dev/null
echo "== GPU 1"; cat "$out/gpu1.log"
