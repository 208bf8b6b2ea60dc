"""Checks that a run moved a metric the right way: the mean of KEY over the
last K lines of METRICS (a metrics.jsonl) against the first K's, at least
RISE times it (a reward) or at most FALL times it (a loss). Prints one
line ending "ok" or "FAIL"; exits 1 on FAIL.

  check_trend.py METRICS [--key reward_mean] [--window K]
                 (--rise R | --fall F)    (default: --rise 2)
"""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("metrics")
ap.add_argument("--key", default="reward_mean")
ap.add_argument("--window", type=int, default=20)
way = ap.add_mutually_exclusive_group()
way.add_argument("--rise", type=float)
way.add_argument("--fall", type=float)
args = ap.parse_args()
if args.rise is None and args.fall is None:
    args.rise = 2.0
with open(args.metrics) as f:
    values = [json.loads(line)[args.key] for line in f if line.strip()]
k = args.window
if len(values) < 2 * k:
    print("FAIL: %d lines, fewer than 2 x %d" % (len(values), k))
    sys.exit(1)
first, last = sum(values[:k]) / k, sum(values[-k:]) / k
if args.rise is not None:
    ok = last >= args.rise * first and last > 0
    need = "need x%.1f" % args.rise
else:
    ok = last <= args.fall * first
    need = "need <= x%.2f" % args.fall
print("%d lines: %s first %d %.4f, last %d %.4f (x%.2f, %s) %s"
      % (len(values), args.key, k, first, k, last,
         last / first if first else float("inf"), need, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
