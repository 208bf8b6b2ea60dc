"""Checks that an RLHF run learned: the mean reward of the last K
iterations of METRICS (hybrid-rlhf's metrics.jsonl) is at least RATIO times
that of the first K. Prints one line, "ok" or "FAIL", and exits 1 on FAIL.

  check_learns.py METRICS [--window K] [--ratio R]
"""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("metrics")
ap.add_argument("--window", type=int, default=20)
ap.add_argument("--ratio", type=float, default=2.0)
args = ap.parse_args()
with open(args.metrics) as f:
    rewards = [json.loads(line)["reward_mean"] for line in f if line.strip()]
k = args.window
if len(rewards) < 2 * k:
    print("FAIL: %d iterations, fewer than 2 x %d" % (len(rewards), k))
    sys.exit(1)
first, last = sum(rewards[:k]) / k, sum(rewards[-k:]) / k
ok = last >= args.ratio * first and last > 0
print("%d iterations: reward first %d %.4f, last %d %.4f (x%.2f, need x%.1f) %s"
      % (len(rewards), k, first, k, last, last / first if first else float("inf"),
         args.ratio, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
