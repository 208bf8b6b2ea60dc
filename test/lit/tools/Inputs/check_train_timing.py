#!/usr/bin/env python3
"""Checks the line `hybrid-run train-step --random-weights` prints.

  check_train_timing.py LOG BATCH SEQ PARAMS LAYERS WIDTH PEAK

LOG holds hybrid-run's stderr. The line must report BATCH x SEQ tokens and
agree with itself: best <= median, tokens/s = BATCH*SEQ / median, the
model FLOPs = 6 PARAMS BATCH SEQ + 12 LAYERS WIDTH SEQ BATCH SEQ, FLOP/s =
FLOPs / median, MFU = FLOP/s / PEAK; the losses are finite and positive and
the peak memory above zero. Prints one line. Standard library only.
"""
import math
import re
import sys

LINE = re.compile(
    r"train-step (?P<model>.+?): (?P<params>\S+) trainable params, "
    r"(?P<batch>\d+)x(?P<seq>\d+) tokens: step (?P<ms>[0-9.]+) ms \(median of "
    r"(?P<repeat>\d+); best (?P<best>[0-9.]+) ms\), (?P<tps>[0-9.]+) tokens/s; "
    r"model (?P<flops>\S+) FLOP/step \(6N (?P<dense>\S+) \+ attention "
    r"(?P<attn>\S+) over (?P<layers>\d+) layers x (?P<width>\d+)\), "
    r"(?P<rate>\S+) FLOP/s, MFU (?:(?P<mfu>\S+) of (?P<peak>\S+) FLOP/s|"
    r"(?P<na>n/a) \(no peak for the CPU: give --peak-flops\)); "
    r"loss (?P<loss0>\S+) -> (?P<loss1>\S+); peak (?P<gib>\S+) GiB")


def near(a, b, rtol):
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def main(argv):
    text = open(argv[1]).read()
    batch, seq, params, layers, width = (int(v) for v in argv[2:7])
    # PEAK "none": a CPU run without --peak-flops, which prints no MFU.
    peak = None if argv[7] == "none" else float(argv[7])
    m = LINE.search(text)
    if not m:
        print("no timing line in: %s FAIL" % text.strip())
        return 1
    v = {k: (float(x) if x is not None and
             re.fullmatch(r"[-+0-9.eE]+|nan|inf", x) else x)
         for k, x in m.groupdict().items()}
    tokens = batch * seq
    dense = 6.0 * params * tokens
    attn = 12.0 * layers * width * seq * tokens
    # Printed with 4 significant digits (%.4g), times with 2 decimals.
    checks = [
        ("tokens", v["batch"] == batch and v["seq"] == seq),
        ("best <= median", 0 < v["best"] <= v["ms"]),
        ("tokens/s", near(v["tps"], tokens / (v["ms"] / 1000), 2e-2)),
        ("6N", near(v["dense"], dense, 1e-3)),
        ("attention", near(v["attn"], attn, 1e-3) and
         v["layers"] == layers and v["width"] == width),
        ("FLOPs", near(v["flops"], dense + attn, 1e-3)),
        ("FLOP/s", near(v["rate"], (dense + attn) / (v["ms"] / 1000), 2e-2)),
        ("peak FLOP/s", v["na"] is not None if peak is None else
         v["na"] is None and near(v["peak"], peak, 1e-3)),
        ("MFU", peak is None or near(v["mfu"], v["rate"] / peak, 1e-3)),
        ("losses", all(isinstance(v[k], float) and math.isfinite(v[k]) and
                       v[k] > 0 for k in ("loss0", "loss1"))),
        ("peak memory", v["gib"] > 0),
    ]
    bad = [name for name, ok in checks if not ok]
    print("%dx%d tokens, %g ms, %g tokens/s, %g FLOP/step, MFU %s: %s" %
          (batch, seq, v["ms"], v["tps"], v["flops"],
           "n/a" if v["mfu"] is None else "%g" % v["mfu"],
           "ok" if not bad else "FAIL (" + ", ".join(bad) + ")"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
