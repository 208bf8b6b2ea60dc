#!/usr/bin/env python3
"""Compares the losses two `hybrid-run train` logs print step by step (the
same run on two devices).

  compare_losses.py A.log B.log RTOL

Both logs must print the same steps; every loss of A must be within RTOL
relative of B's. Prints one line; exits 1 when they differ. Standard
library only.
"""
import re
import sys

STEP = re.compile(r"train step (\d+)/\d+: loss ([0-9.eE+-]+|nan|inf)")


def losses(path):
    return {int(m.group(1)): float(m.group(2))
            for m in STEP.finditer(open(path).read())}


def main(argv):
    a, b, rtol = losses(argv[1]), losses(argv[2]), float(argv[3])
    if not a or sorted(a) != sorted(b):
        print("steps differ: %s vs %s FAIL" % (sorted(a), sorted(b)))
        return 1
    worst, at = 0.0, min(a)
    for step in sorted(a):
        rel = abs(a[step] - b[step]) / max(abs(b[step]), 1e-30)
        if not rel <= worst:  # NaN is the worst
            worst, at = rel, step
    first, last = min(a), max(a)
    ok = worst <= rtol
    print("%d steps, loss %.6f -> %.6f (vs %.6f -> %.6f), worst relative "
          "difference %.1e at step %d (bound %g) %s" %
          (len(a), a[first], a[last], b[first], b[last], worst, at, rtol,
           "ok" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
