#!/usr/bin/env python3
"""A stand-in for hybrid-run generate on a GPU, for bench/plan_search.py's
test: prints a tune log of three decode products (HYBRID_CUDA_TUNE_LOG=1)
and a decode time that depends on HYBRID_CUDA_PLANS the way a step can
disagree with the products timed alone: the LM head is faster on cuBLASLt
and fc2 with one stashed step, though both lost alone; every other pin
costs time; a pin of an unknown shape fails as the real one does."""
import os
import sys

LOG = """\
hybrid: tuned linear bf16 1 x 2048 x 50272 [N,K]: cuBLASLt 67.3 us, skinny 76.6 us, streaming 66.0 us (stash 0: 66.0, 1: 71.0, 2: 72.0) (after a 5 us kernel) -> streaming GEMV
hybrid: tuned linear bf16 1 x 8192 x 2048 [N,K]: cuBLASLt 24.4 us, skinny 26.3 us, streaming 20.3 us (stash 0: 20.3, 1: 20.4, 2: 20.6) (after a 5 us kernel) -> streaming GEMV
hybrid: tuned linear_group bf16 1 x 2048 x 2048+2048+2048 [N,K]: apart 16.9 us, one launch 18.8 us, streaming 15.9 us (stash 0: 16.0, 1: 15.9, 2: 16.1) (after a 5 us kernel) -> streaming GEMV, 1 steps stashed
hybrid: tuned linear bf16 128 x 2048 x 8192 [N,K]: cuBLASLt 40.0 us, skinny inf us, streaming inf us -> cuBLASLt
"""
GAINS = {"1x2048x50272=cublaslt": 0.010, "1x8192x2048=stream:1": 0.020}
SHAPES = ("1x2048x50272", "1x8192x2048", "1x2048x2048+2048+2048")

ms = 1.300
for pin in filter(None, os.environ.get("HYBRID_CUDA_PLANS", "").split(",")):
    if pin.split("=")[0] not in SHAPES:
        sys.stderr.write("hybrid-run: no such product: %s\n" % pin)
        sys.exit(1)
    ms += -GAINS[pin] if pin in GAINS else 0.005
if os.environ.get("HYBRID_CUDA_TUNE_LOG") == "1":
    sys.stderr.write(LOG)
sys.stderr.write("hybrid-run: generate opt: 1x128 prompt, 128 new tokens: "
                 "prefill 2.50 ms, decode %.3f ms/step, %d tokens/s\n" %
                 (ms, 1000 / ms))
