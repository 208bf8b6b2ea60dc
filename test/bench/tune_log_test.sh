#!/usr/bin/env bash
# bench/tune_log.py on a tune log in the form Gemm.cu and StepTuning.cpp
# print it: every kind of choice becomes the pin that takes exactly it, a
# shape two products chose differently is left out, and the step tuner's
# pins override the products' own.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cat > "$log" <<'LOG'
hybrid: tuned linear bf16 1 x 2048 x 50272 [N,K]: cuBLASLt 66.2 us, skinny 74.2 us, streaming 70.1 us (after a 5 us kernel) -> cuBLASLt
hybrid: tuned linear bf16 1 x 8192 x 2048 [N,K]: cuBLASLt 24.8 us, skinny 26.7 us, streaming 21.2 us (stash 0: 21.2, 1: 20.9, 2: 21.0) (after a 5 us kernel) -> streaming GEMV, 1 steps stashed
hybrid: tuned linear bf16 1 x 2048 x 8192 [N,K]: cuBLASLt 24.9 us, skinny 22.7 us, streaming 22.6 us (after a 5 us kernel) -> streaming GEMV
hybrid: tuned linear bf16 1 x 2048 x 2048 [N,K]: cuBLASLt 15.9 us, skinny 10.9 us, streaming 11.3 us (after a 5 us kernel) -> skinny, 4 splits (pinned)
hybrid: tuned linear_group bf16 1 x 2048 x 2048+2048+2048 [N,K]: apart 20.1 us, one launch 17.2 us, streaming 18.5 us (after a 5 us kernel) -> one launch, 2 splits
hybrid: tuned linear_group bf16 1 x 2048 x 2048+512+512 [N,K]: apart 14.0 us, one launch 14.5 us, streaming inf us (after a 5 us kernel) -> apart
hybrid: tuned linear bf16 1 x 2048 x 512 [N,K]: cuBLASLt 7.0 us, skinny 6.1 us, streaming 6.3 us (after a 5 us kernel) -> skinny, 1 splits
hybrid: tuned linear bf16 1 x 2048 x 512 [N,K]: cuBLASLt 7.0 us, skinny 6.9 us, streaming 6.3 us (after a 5 us kernel) -> streaming GEMV
hybrid: tuned linear bf16 128 x 2048 x 8192 [N,K]: cuBLASLt 30.2 us, skinny inf us, streaming inf us -> cuBLASLt
hybrid: step tuning: 3 trials over 2 plans in 0.10 s, the step 1.25 ms in the first trial, 1.24 ms in the last; as pins: HYBRID_CUDA_PLANS=1x2048x2048+2048+2048=apart,1x2048x50272=stream:2
LOG
got=$(python3 "$here/../../bench/tune_log.py" "$log")
want="128x2048x8192=cublaslt,1x2048x2048=skinny:4,1x2048x2048+2048+2048=apart,1x2048x2048+512+512=apart,1x2048x50272=stream:2,1x2048x8192=stream:0,1x8192x2048=stream:1"
echo "$got"
[ "$got" = "$want" ] || { echo "FAIL: expected $want"; exit 1; }
echo "ok: tune_log.py pins what the log chose"
