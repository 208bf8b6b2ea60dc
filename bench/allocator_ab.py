#!/usr/bin/env python3
"""Issue 29's A/B of the CUDA device's two allocators: the same hybrid-run
commands with HYBRID_CUDA_ALLOCATOR=caching (the default: cudaMalloc'd
blocks cached by size class) and =async (CUDA's stream-ordered pool), in
one call, each run with HYBRID_CUDA_ALLOCATOR_REPORT=1 so that it also
prints what its allocator held from CUDA at its peak.

  bench/allocator_ab.py --hybrid-run BIN --bundles DIR [--models MODEL]
                        [--cases c1,c2] [--rounds R] [--repeat N]
                        [--max-seconds S] [--timeout S] [--out FILE.json]

Cases (MODEL: opt-1.3b, the OPT-1.3B shape in bf16, by default; random
weights, --device cuda), as bench/ppo.py, bench/train.py and
bench/generate.py run them:
  ppo          ppo-step MODEL-ppo.hyb --batch 32 --prompt-len 256
               --new-tokens 256 --micro-batch 8 --repeat 3: the median step
  ppo-release  the same with --release-cache (the KV cache and generation's
               workspaces freed after each generation, taken again by the
               next: the case where a pool that splits and merges blocks
               may hold less than size-class caching)
  train        train-step MODEL-train.hyb --batch 8 --seq 512 --repeat 3:
               the median step
  b1, b32      generate MODEL.hyb --batch 1|32 --prompt-len 128
               --max-new-tokens 128 --repeat 3: decode ms per step
Round r runs every case with both allocators, caching first in odd rounds
and async first in even ones (so that neither always runs second); a round
that would end past --max-seconds (330, by the rounds before it) is not
started. Per case the table gives each allocator's time (the mean over
rounds, every run's figure beside it: their spread is the noise to judge a
difference by), the peak in use (hybrid-run's peak: the most bytes callers
held at once, the same meaning for both and the same figure where the runs
ask for the same memory), the peak held from CUDA (the allocator's own
report: what rounding and fragmentation cost) and how many requests reached
CUDA.
A run that fails prints "FAIL  case allocator: ..."; the exit status is 1
if any did. Standard library only.
"""
import argparse
import os
import re
import sys
import time

from benchlib import add_common_arguments, run_line, write_results
from generate import LINE as GENERATE_LINE
from ppo import LINE as PPO_LINE
from train import LINE as TRAIN_LINE

ALLOCATORS = ("caching", "async")

# The line CudaDevice prints when it goes (HYBRID_CUDA_ALLOCATOR_REPORT=1).
REPORT = re.compile(
    r"hybrid: \S+ allocator (?P<kind>\S+): peak (?P<held>[0-9.]+) GiB held "
    r"from CUDA, peak (?P<used>[0-9.]+) GiB in use; (?P<allocs>\d+) "
    r"allocations, (?P<driver>\d+) from CUDA")

PPO = ["ppo-step", "%s-ppo.hyb", "--batch", "32", "--prompt-len", "256",
       "--new-tokens", "256", "--micro-batch", "8"]
TRAIN = ["train-step", "%s-train.hyb", "--batch", "8", "--seq", "512"]


def generate(batch):
    return ["generate", "%s.hyb", "--batch", str(batch), "--prompt-len", "128",
            "--max-new-tokens", "128"]


def ppo_case(extra):
    return (PPO + extra, PPO_LINE, "step", "s/step",
            lambda v: "generate %s s, train %s s" % (v["gen"], v["train"]))


def generate_case(batch):
    return (generate(batch), GENERATE_LINE, "step", "ms/decode step",
            lambda v: "end to end %s tokens/s" % v["tps"])


# name: (hybrid-run arguments, the bundle second, %s standing for the model;
# its result line; the group of that line compared and its unit; a detail
# from the same line)
CASES = {
    "ppo": ppo_case([]),
    "ppo-release": ppo_case(["--release-cache"]),
    "train": (TRAIN, TRAIN_LINE, "ms", "ms/step",
              lambda v: "%s tokens/s" % v["tps"]),
    "b1": generate_case(1),
    "b32": generate_case(32),
}


def run_case(args, case, allocator):
    """One hybrid-run process of `case` with `allocator`: its time, peaks
    and CUDA requests."""
    argv, line, timed, _, detail = CASES[case]
    cmd = [args.hybrid_run, argv[0],
           os.path.join(args.bundles, argv[1] % args.models),
           "--random-weights", "1", "--device", args.device, "--repeat",
           str(args.repeat)] + argv[2:]
    os.environ["HYBRID_CUDA_ALLOCATOR"] = allocator
    os.environ["HYBRID_CUDA_ALLOCATOR_REPORT"] = "1"
    start = time.monotonic()
    m = run_line(cmd, line, args.timeout)
    report = REPORT.search(m.string)
    if not report or report.group("kind") != allocator:
        raise RuntimeError("no '%s' allocator report in the output (a "
                           "hybrid-run older than HYBRID_CUDA_ALLOCATOR?)" %
                           allocator)
    v = m.groupdict()
    return {
        "time": float(v[timed]),
        "detail": detail(v),
        "peak_in_use_gib": float(report.group("used")),
        "peak_held_gib": float(report.group("held")),
        "allocations": int(report.group("allocs")),
        "from_cuda": int(report.group("driver")),
        "wall_s": time.monotonic() - start,
    }


def mean(xs):
    return sum(xs) / len(xs)


def cell(runs, key, fmt):
    """'mean (run, run, ...)' of `key` over `runs`; one figure where the
    runs agree; '-' without any."""
    shown = [fmt % r[key] for r in runs]
    if not shown:
        return "-"
    if len(set(shown)) == 1:
        return shown[0]
    return "%s (%s)" % (fmt % mean([r[key] for r in runs]), ", ".join(shown))


def pair(results, case, key, fmt):
    return " / ".join(cell(results[case][a], key, fmt) for a in ALLOCATORS)


def table(results):
    rows = ["| case | unit | caching | async | async / caching | peak in use, "
            "GiB (caching / async) | peak held from CUDA, GiB (caching / "
            "async) | requests from CUDA (caching / async) |",
            "|---|---|---|---|---|---|---|---|"]
    for case, by in results.items():
        caching, async_ = by["caching"], by["async"]
        ratio = ("%.4f" % (mean([r["time"] for r in async_]) /
                           mean([r["time"] for r in caching]))
                 if caching and async_ else "-")
        rows.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            case, CASES[case][3], cell(caching, "time", "%.4g"),
            cell(async_, "time", "%.4g"), ratio,
            pair(results, case, "peak_in_use_gib", "%.3f"),
            pair(results, case, "peak_held_gib", "%.3f"),
            pair(results, case, "from_cuda", "%d")))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    add_common_arguments(ap, models="opt-1.3b", timeout=300)
    ap.add_argument("--cases", default="ppo,ppo-release,train,b1,b32")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-seconds", type=int, default=330,
                    help="no round starts that would end past this many "
                    "seconds (by the rounds before it)")
    args = ap.parse_args()
    if "," in args.models:
        ap.error("one model at a time (--models %s)" % args.models)
    cases = args.cases.split(",")
    for case in cases:
        if case not in CASES:
            ap.error("unknown case '%s' (%s)" % (case, ", ".join(CASES)))
    results = {case: {a: [] for a in ALLOCATORS} for case in cases}
    failed, start = 0, time.monotonic()
    for r in range(1, args.rounds + 1):
        spent = time.monotonic() - start
        if r > 1 and spent + spent / (r - 1) > args.max_seconds:
            print("round %d not started: %.0f s spent, another round would "
                  "pass --max-seconds %d" % (r, spent, args.max_seconds),
                  flush=True)
            break
        order = ALLOCATORS if r % 2 else ALLOCATORS[::-1]
        for case in cases:
            for allocator in order:
                try:
                    run = run_case(args, case, allocator)
                except (RuntimeError, OSError) as err:
                    print("FAIL  %s %s: %s" % (case, allocator, err),
                          flush=True)
                    failed += 1
                    continue
                results[case][allocator].append(run)
                print("round %d  %-11s %-7s %9.4g %-14s (%s)  peak in use "
                      "%.3f GiB, held %.3f GiB; %d allocations, %d from CUDA;"
                      " %.0f s" %
                      (r, case, allocator, run["time"], CASES[case][3],
                       run["detail"], run["peak_in_use_gib"],
                       run["peak_held_gib"], run["allocations"],
                       run["from_cuda"], run["wall_s"]), flush=True)
    print("\n%s\n\n%.0f s in all" % (table(results), time.monotonic() - start))
    write_results(args.out, results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
