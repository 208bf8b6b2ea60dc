#!/usr/bin/env python3
"""Which GEMM plans make a decode step fastest, measured in the step.

GEMM tuning times each product alone (kernels/cuda/Gemm.cu); a decode step
runs them back to back, and close candidates can rank the other way there
(bench/RESULTS.md, thirteenth session). This runs a bundle's decode once
with the tune log on (HYBRID_CUDA_TUNE_LOG=1) to learn its products and
their candidates, then searches plan by plan: for each decode product shape
(largest first) it pins each alternative kind of kernel, or stash count,
with HYBRID_CUDA_PLANS (kernels/cuda/PlanPins.h), keeps a pin when the step
got faster by more than --threshold ms, and goes on from there. Each trial
is one hybrid-run process (weights initialised, products tuned, best of
--repeat generations), ~10 s for OPT-1.3B on an H200. Prints every trial,
then the pins found, and runs the untouched default and the pins once more
to check the difference holds. Run on the GPU host:

  bench/plan_search.py --hybrid-run BIN --bundle B.hyb [--batch 1]
      [--within 1.25] [--threshold 0.003] [--env "VAR=x ..."]

--within: alternatives of another kind are tried when their time alone was
at most this multiple of the product's best (every stash count is tried).
--env sets kernel switches for every run (e.g. HYBRID_CUDA_TUNE=clean).
Standard library only.
"""
import argparse
import os
import re
import subprocess
import sys

from tune_log import TUNED, pin_of, shape_of

DECODE = re.compile(r"decode ([0-9.]+) ms/step")
STASHES = re.compile(r"\(stash ([^)]*)\)")


def run(args, pins, log=False):
    """The decode ms per step with these pins, and stderr's lines."""
    env = dict(os.environ)
    for setting in args.env.split():
        name, _, value = setting.partition("=")
        env[name] = value
    if pins:
        env["HYBRID_CUDA_PLANS"] = ",".join(
            "%s=%s" % (shape, kind) for shape, kind in sorted(pins.items()))
    if log:
        env["HYBRID_CUDA_TUNE_LOG"] = "1"
    cmd = [args.hybrid_run, "generate", args.bundle, "--random-weights", "1",
           "--device", "cuda", "--batch", str(args.batch), "--prompt-len",
           "128", "--max-new-tokens", "128", "--repeat", str(args.repeat)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, ["timed out after %d s" % args.timeout]
    m = DECODE.search(p.stderr)
    lines = p.stderr.splitlines()
    if p.returncode != 0 or not m:
        return None, lines[-3:]
    return float(m.group(1)), lines


def time_of(text, label):
    m = re.search(r"%s ([0-9.]+|inf) us" % label, text)
    return float(m.group(1)) if m else float("inf")


def candidates(lines, rows, within):
    """{shape: (best us, current pin kind, [alternative pin kinds])} for the
    decode step's products (M = rows) in the tune log."""
    found = {}
    for line in lines:
        m = TUNED.search(line)
        if not m or int(m.group(3)) != rows:
            continue
        shape = shape_of(m)
        times, choice = m.group(6), m.group(7)
        group = "apart" in times
        stream = time_of(times, "streaming")
        stashes = STASHES.search(times)
        stash_kinds = (["stream:" + s.split(":")[0].strip()
                        for s in stashes.group(1).split(",")]
                       if stashes else (["stream"] if stream < float("inf")
                                        else []))
        if group:
            others = {"apart": time_of(times, "apart"),
                      "one": time_of(times, "one launch")}
        else:
            others = {"cublaslt": time_of(times, "cuBLASLt"),
                      "skinny": time_of(times, "skinny")}
        best = min([stream] + list(others.values()))
        # The search pins kinds (their counts tuned), streams by stash.
        current = pin_of(choice) or "cublaslt"
        if not current.startswith("stream"):
            current = current.split(":")[0]
        alternatives = [k for k, t in others.items() if t <= within * best]
        alternatives += stash_kinds
        found[shape] = (best, current,
                        [k for k in alternatives if k != current and
                         not (current == "stream:0" and k == "stream")])
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hybrid-run", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--within", type=float, default=1.25)
    ap.add_argument("--threshold", type=float, default=0.003)
    ap.add_argument("--env", default="")
    ap.add_argument("--timeout", type=int, default=180)
    args = ap.parse_args()

    base, lines = run(args, {}, log=True)
    if base is None:
        print("FAIL  the default run: %s" % " / ".join(lines))
        return 1
    products = candidates(lines, args.batch, args.within)
    if not products:
        print("FAIL  no decode product in the tune log (M = %d)" % args.batch)
        return 1
    print("default: %.3f ms/step; %d decode product shapes" %
          (base, len(products)))
    for shape, (best, current, alts) in sorted(
            products.items(), key=lambda kv: -kv[1][0]):
        print("  %-24s %7.1f us alone, kept %-9s; trying %s" %
              (shape, best, current, ", ".join(alts) or "nothing"))
    pins, best_ms = {}, base
    for shape, (_, current, alts) in sorted(products.items(),
                                            key=lambda kv: -kv[1][0]):
        for kind in alts:
            trial = dict(pins)
            trial[shape] = kind
            ms, out = run(args, trial)
            verdict = ("FAILED: " + " / ".join(out)) if ms is None else \
                "%.3f ms" % ms
            kept = ms is not None and ms < best_ms - args.threshold
            print("  %-24s %-10s %s%s" % (shape, kind, verdict,
                                          "  (kept)" if kept else ""))
            sys.stdout.flush()
            if kept:
                pins, best_ms = trial, ms
    plans = ",".join("%s=%s" % kv for kv in sorted(pins.items()))
    print("found: %s" % (plans or "nothing better than the default"))
    if pins:
        again, _ = run(args, {})
        found, _ = run(args, pins)
        print("again: default %s, found %s (HYBRID_CUDA_PLANS=%s)" %
              ("%.3f ms" % again if again else "FAILED",
               "%.3f ms" % found if found else "FAILED", plans))
    return 0


if __name__ == "__main__":
    sys.exit(main())
