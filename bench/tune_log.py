#!/usr/bin/env python3
"""What GEMM tuning chose, read from its log (HYBRID_CUDA_TUNE_LOG=1), as
HYBRID_CUDA_PLANS pins (kernels/cuda/PlanPins.h) that make another run take
exactly those plans without timing anything: each product's and linear
group's choice ("hybrid: tuned ... -> CHOICE"), then the step tuner's
("as pins: HYBRID_CUDA_PLANS=..."), which overrides them. A shape whose
lines chose differently (two products of one shape with other epilogues)
is left to tuning. bench/decode_kernels.sh pins a profiled run this way:
without a graph and under Nsight Compute, tuning would time its candidates
through the profiler and choose other kernels than the captured step runs.

  bench/tune_log.py LOG     prints the pins (empty when there are none)

Standard library only.
"""
import re
import sys

TUNED = re.compile(r"hybrid: tuned (\S+) (\S+) (\d+) x (\d+) x ([\d+]+) "
                   r"\[[NK],[NK]\][^:]*: (.*) -> (.*)$")
STEP_PINS = re.compile(r"as pins: HYBRID_CUDA_PLANS=(\S+)")
# A tune log's choice, as the pin that takes exactly it.
CHOICES = [
    (re.compile(r"cuBLASLt$"), lambda m: "cublaslt"),
    (re.compile(r"skinny, (\d+) splits$"), lambda m: "skinny:" + m.group(1)),
    (re.compile(r"streaming GEMV(?:, (\d+) steps stashed)?$"),
     lambda m: "stream:" + (m.group(1) or "0")),
    (re.compile(r"one launch, (\d+) splits$"), lambda m: "one:" + m.group(1)),
    (re.compile(r"apart$"), lambda m: "apart"),
]


def pin_of(choice):
    """The pin kind (with its value) for a tune log's choice, or None."""
    choice = choice.replace(" (pinned)", "").strip()
    for pattern, kind in CHOICES:
        m = pattern.match(choice)
        if m:
            return kind(m)
    return None


def shape_of(m):
    """A TUNED match's shape as pins name it (MxKxN, N maybe 'a+b+c')."""
    return "%sx%sx%s" % (m.group(3), m.group(4), m.group(5))


def plans(lines):
    """{shape: pin} for what the log's tuning chose (see the module doc)."""
    chosen, step = {}, {}
    for line in lines:
        m = TUNED.search(line)
        if m:
            pin = pin_of(m.group(7))
            if pin:
                chosen.setdefault(shape_of(m), set()).add(pin)
            continue
        m = STEP_PINS.search(line)
        if m:
            for entry in m.group(1).split(","):
                shape, _, kind = entry.partition("=")
                step[shape] = kind
    pins = {shape: kinds.pop() for shape, kinds in chosen.items()
            if len(kinds) == 1}
    pins.update(step)
    return pins


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        pins = plans(f)
    print(",".join("%s=%s" % item for item in sorted(pins.items())))


if __name__ == "__main__":
    main()
