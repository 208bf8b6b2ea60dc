#!/usr/bin/env python3
"""What each kernel of a repeated step costs on the step's critical path.

Reads the CSV that HYBRID_CUDA_TIMELINE=FILE writes (kernels built with
-DHYBRIDC_CUDA_TIMELINE=ON; kernels/cuda/Timeline.h): per kernel launch, its
grid, block size, and the %globaltimer readings when its first block arrived
(was resident) and when its wait for the kernel before it returned (its
work started). The log's tail is the last call's decode steps, one CUDA
graph replayed; this finds the step's period (the launch sequence repeats
exactly), averages over the last --steps steps, and prints per kernel of the
step:
  cost  its start to the next kernel's start: what it adds to the step
        (cuBLASLt kernels stamp nothing, so theirs falls to the kernel of
        ours before them);
  lead  its arrival to its start: how long it sat resident, launched early
        under programmatic dependent launch, before it could begin;
then the same totalled by launch shape. %globaltimer ticks coarsely on some
GPUs; the averages over many steps still resolve well below a tick.
  python3 bench/timeline.py FILE [--steps 100] [--period P]
"""
import argparse
import csv
import sys
from collections import OrderedDict


def read(path):
    try:
        with open(path) as f:
            rows = list(csv.DictReader(f))
        sig = [(int(r['grid_x']), int(r['grid_y']), int(r['grid_z']),
                int(r['threads'])) for r in rows]
        arrive = [int(r['arrive_ns']) for r in rows]
        start = [int(r['start_ns']) for r in rows]
    except (OSError, KeyError, TypeError, ValueError) as e:
        sys.exit(f"{path}: not a HYBRID_CUDA_TIMELINE log ({e!r})")
    return sig, arrive, start


def find_period(sig, window_cap=600):
    """The smallest P such that the log's tail repeats with period P over
    at least three periods, and over `window_cap` launches or half the log,
    whichever is fewer (the head holds prefill, tuning and warm-up)."""
    n = len(sig)
    for p in range(1, n // 3 + 1):
        window = max(3 * p, min(window_cap, (n - p) // 2))
        if window + p > n:
            break
        if all(sig[i] == sig[i - p] for i in range(n - window, n)):
            return p
    return None


def shape(s):
    return f"{s[0]}x{s[1]}x{s[2]} x{s[3]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('file')
    ap.add_argument('--steps', type=int, default=100,
                    help='steps averaged, the last ones logged')
    ap.add_argument('--period', type=int,
                    help='launches per step (default: found from the log)')
    args = ap.parse_args()
    sig, arrive, start = read(args.file)
    p = args.period or find_period(sig)
    if not p:
        sys.exit(f"{args.file}: no repeating step found in {len(sig)} launches")
    steps = min(args.steps, len(sig) // p - 1)
    if steps < 1:
        sys.exit(f"{args.file}: fewer than two steps of {p} launches")
    # The last `steps` complete steps, plus the next step's first start
    # (the last step's last kernel ends where it begins).
    first = len(sig) - (steps + 1) * p
    cost = [0.0] * p
    lead = [0.0] * p
    for s in range(steps):
        base = first + s * p
        for k in range(p):
            i = base + k
            cost[k] += (start[i + 1] - start[i]) / steps / 1e3
            lead[k] += (start[i] - arrive[i]) / steps / 1e3
    # Rotate so that the step ends with its most expensive handoff (the
    # graph boundary or the LM head's cuBLASLt product, typically).
    last = max(range(p), key=lambda k: cost[k])
    order = [(last + 1 + k) % p for k in range(p)]
    step_us = sum(cost)
    print(f"{args.file}: {len(sig)} launches logged; a step is {p} launches "
          f"of ours, {step_us:.1f} us (mean of the last {steps} steps)")
    print(f"{'#':>4} {'launch':<22} {'cost us':>8} {'lead us':>8} {'cum us':>8}")
    cum = 0.0
    for n, k in enumerate(order):
        cum += cost[k]
        print(f"{n:>4} {shape(sig[first + k]):<22} {cost[k]:>8.2f} "
              f"{lead[k]:>8.2f} {cum:>8.1f}")
    groups = OrderedDict()
    for k in order:
        g = groups.setdefault(shape(sig[first + k]), [0, 0.0])
        g[0] += 1
        g[1] += cost[k]
    print("\nby launch shape (grid x threads):")
    for name, (count, total) in sorted(groups.items(), key=lambda x: -x[1][1]):
        print(f"  {name:<22} {count:>4} launches {total:>9.1f} us "
              f"{100 * total / step_us:>5.1f} %  ({total / count:.2f} us each)")


if __name__ == '__main__':
    main()
