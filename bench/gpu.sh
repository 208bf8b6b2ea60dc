#!/usr/bin/env bash
# Run on the GPU host from the checkout's root, after test/gpu/run.sh built
# the runtime there, with BUILD/device-bundles/bench and BUILD/anchors
# carried from bench/prepare.sh: times hybridc's generation (bench/generate.py)
# and training step (bench/train.py; TRAIN=0 skips it, TRAIN_ARGS adds
# flags such as "--models gpt2-124m --repeat 2"), the PPO-shaped step
# (bench/ppo.py; PPO=0 skips it, PPO_ARGS adds flags) and, in the same run,
# the anchors named in ANCHORS (default "eager"); HYBRIDC=0 runs the anchors
# alone (bench/gpu2.sh runs both halves on two GPUs at once):
#   eager     ../shared/bench/anchor_h200.py      PyTorch eager + HF generate
#   compiled  ../shared/bench/anchor_compiled_h200.py  torch.compile, static cache
#   ppo       ../shared/bench/anchor_ppo_step_h200.py  the PPO-shaped step
#   ds        ../shared/bench/anchor_ds_he_h200.py DeepSpeed Hybrid Engine
#             (needs BUILD/anchors/wheels: see ../shared/bench/ANCHORS.md)
# Writes $OUT/hybridc.json and each anchor's JSON to $OUT.
set -uo pipefail
build=${1:-build}
bin=${HYBRID_RUN:-/tmp/hybridc-gpu-host/bin/hybrid-run}
out=${OUT:-/tmp/hybridc-bench}
mkdir -p "$out"
anchors=$PWD/$build/anchors
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
git rev-parse HEAD 2>/dev/null | sed 's/^/commit /'
rc=0
if [ "${HYBRIDC:-1}" != 0 ]; then
  echo "== hybridc"
  python3 bench/generate.py --hybrid-run "$bin" --bundles "$build/device-bundles/bench" \
    --out "$out/hybridc.json" ${GENERATE_ARGS:-}
  rc=$?
fi
if [ "${HYBRIDC:-1}" != 0 ] && [ "${TRAIN:-1}" != 0 ]; then
  python3 bench/train.py --hybrid-run "$bin" --bundles "$build/device-bundles/bench" \
    --out "$out/hybridc.json" ${TRAIN_ARGS:-} || rc=1
fi
if [ "${HYBRIDC:-1}" != 0 ] && [ "${PPO:-1}" != 0 ]; then
  python3 bench/ppo.py --hybrid-run "$bin" --bundles "$build/device-bundles/bench" \
    --out "$out/hybridc.json" ${PPO_ARGS:-} || rc=1
fi
for a in ${ANCHORS:-eager}; do
  start=$SECONDS
  case $a in
    eager)
      echo "== anchor: PyTorch eager"
      OUT=$out timeout 420 python3 "$anchors/anchor_h200.py" 2>&1 | tail -9 ;;
    compiled)
      echo "== anchor: torch.compile"
      OUT=$out timeout 420 python3 "$anchors/anchor_compiled_h200.py" 2>&1 | tail -4 ;;
    ppo)
      echo "== anchor: PPO-shaped step (eager, two-copy + torch.compile)"
      OUT=$out timeout 600 python3 "$anchors/anchor_ppo_step_h200.py" 2>&1 | tail -12 ;;
    ds)
      echo "== anchor: DeepSpeed Hybrid Engine"
      site=/tmp/ds-site
      if [ ! -d $site/deepspeed ]; then
        pip install -q --no-index --no-deps --target $site "$anchors"/wheels/*.whl &&
          rm -rf /tmp/ds-src && mkdir -p /tmp/ds-src &&
          tar xzf "$anchors"/wheels/deepspeed-*.tar.gz -C /tmp/ds-src &&
          (cd /tmp/ds-src/deepspeed-* && DS_BUILD_OPS=0 TORCH_CUDA_ARCH_LIST=9.0 \
            pip install -q --no-index --no-deps --no-build-isolation --target $site .) ||
          { echo "FAIL  DeepSpeed install"; continue; }
      fi
      # One batch size per process (see the script): ppo (with b32), b1.
      for mode in ppo b1; do
        # DeepSpeed's op builder parses the architecture list when it
        # JIT-compiles its kernels; on the two-GPU host (2026-12-01) it met
        # a "9.0a" it cannot parse (int("0a")): give it ours.
        OUT=$out MODE=$mode PYTHONPATH=$site TORCH_CUDA_ARCH_LIST=9.0 \
          timeout 300 python3 "$anchors/anchor_ds_he_h200.py" \
          > "$out/ds-$mode.log" 2>&1
        grep "^RESULT" "$out/ds-$mode.log" | tee "$out/ds-$mode.result" ||
          { echo "FAIL  DeepSpeed $mode:"; tail -5 "$out/ds-$mode.log"; }
      done ;;
    *) echo "unknown anchor '$a'"; rc=1 ;;
  esac
  echo "   ($a: $((SECONDS - start)) s)"
done
ls "$out"
exit $rc
