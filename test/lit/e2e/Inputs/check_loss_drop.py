"""Checks that a training run's loss fell: the mean "loss" of the last K
lines of METRICS (metrics.jsonl) is at most FRACTION of the first K's.
Prints one line ending "ok" or "FAIL"; exits 1 on FAIL.

  check_loss_drop.py METRICS [--window K] [--fraction F]
"""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("metrics")
ap.add_argument("--window", type=int, default=4)
ap.add_argument("--fraction", type=float, default=0.5)
args = ap.parse_args()
with open(args.metrics) as f:
    losses = [json.loads(line)["loss"] for line in f if line.strip()]
k = args.window
first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
ok = len(losses) >= 2 * k and last <= args.fraction * first
print("%d steps: loss first %d %.4f, last %d %.4f (need <= %.2f x) %s"
      % (len(losses), k, first, k, last, args.fraction, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
