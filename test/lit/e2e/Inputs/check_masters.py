#!/usr/bin/env python3
"""Compares the f32 masters after one AdamW step of a bf16 bundle with
torch.optim.AdamW's first step from the fixture's f32 weights rounded to
bf16 (what the bundle trains) and the fixture's f32 gradients.

  check_masters.py OUT.safetensors MODEL.safetensors REF.safetensors
                   LR BETA1 BETA2 EPS WEIGHT_DECAY FRACTION

OUT holds `opt.master.<name>` (hybrid-run train-step of a bf16 bundle);
MODEL the fixture's f32 weights; REF its `grad.<name>`. AdamW's first step
moves each weight by -lr * g / (|g| + eps) after the decay: it depends on
the gradient's sign only, so the bundle's bf16 gradients (a few per cent
from the f32 ones) give torch's masters exactly, up to f32 rounding (1e-6),
except where bf16 flips the sign of a near-zero gradient: at most FRACTION
of the elements, each off by at most 2 lr. Standard library only.
"""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402


def bf16(x):
    """x rounded to bfloat16 (nearest even), as a float."""
    (u,) = struct.unpack("<I", struct.pack("<f", x))
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", u & 0xFFFFFFFF))[0]


def main(argv):
    out, model, ref = (st.read(p) for p in argv[1:4])
    lr, b1, b2, eps, wd, fraction = (float(v) for v in argv[4:10])
    total = flipped = 0
    worst = 0.0
    for name in sorted(k for k in out if k.startswith("opt.master.")):
        param = name[len("opt.master."):]
        ours = st.values(out[name])
        weights = st.values(model[param])
        grads = st.values(ref["grad." + param])
        for p, g, got in zip(weights, grads, ours):
            p = bf16(p)
            m, v = (1 - b1) * g, (1 - b2) * g * g
            want = p * (1 - lr * wd) - lr / (1 - b1) * m / (
                math.sqrt(v) / math.sqrt(1 - b2) + eps)
            diff = abs(got - want)
            total += 1
            if diff > 1e-6:
                flipped += 1
                worst = max(worst, diff)
    ok = total > 0 and flipped <= fraction * total and worst <= 2 * lr + 1e-6
    print("%d masters, %d (%.2g) off by more than 1e-6, worst %.3g: %s" %
          (total, flipped, flipped / max(total, 1), worst,
           "ok" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
