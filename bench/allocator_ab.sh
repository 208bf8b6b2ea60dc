#!/usr/bin/env bash
# Issue 29 on the GPU host: the CUDA caching allocator against CUDA's
# stream-ordered pool (HYBRID_CUDA_ALLOCATOR=caching|async) on the same
# hybrid-run commands in one call (bench/allocator_ab.py: the PPO-shaped
# step with and without --release-cache, the 8x512 training step, decode at
# batch 1 and 32, OPT-1.3B shape; two rounds where they fit in 330 s),
# ending with a table for bench/RESULTS.md.
# Run from the checkout's root there, with BUILD/device-bundles/bench
# (bench/prepare.sh) and BUILD/gpu-bins (bench/pack_gpu_bins.sh) carried:
#   PREBUILT=1 bench/gpu_quick.sh build bench/allocator_ab.sh
# gpu_quick.sh sets HYBRID_RUN and BUNDLES; arguments go to allocator_ab.py
# (e.g. 'bench/allocator_ab.sh --rounds 1 --cases ppo,ppo-release').
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${HYBRID_RUN:?set HYBRID_RUN to a hybrid-run built with CUDA, or run this through bench/gpu_quick.sh}"
bundles=${BUNDLES:-build/device-bundles/bench}
[ -d "$bundles" ] ||
  { echo "no $bundles: run bench/prepare.sh where hybridc is built, and carry it"; exit 1; }
command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
exec python3 "$here/allocator_ab.py" --hybrid-run "$HYBRID_RUN" --bundles "$bundles" "$@"
