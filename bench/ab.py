#!/usr/bin/env python3
"""A/B of two hybrid-run binaries on one GPU in one run: generation (OPT-1.3B
batch 1 and 32, and the PPO-shaped generation), the training step (8 x 512)
and the PPO-shaped step, each binary in turn, in rounds that alternate
which goes first, so that the clocks and the host drift equally on both.

  bench/ab.py --bundles DIR --a NAME=BIN[:DIR] --b NAME=BIN[:DIR]
              [--rounds R] [--models m] [--out FILE.json]

DIR holds the bench bundles (bench/prepare.sh); a side that names its own
DIR reads that one instead (a binary from before a bundle format change
needs bundles its own hybridc compiled). Runs bench/generate.py,
bench/train.py and bench/ppo.py (no --release-cache run) for each binary;
prints per figure the median over the rounds of each and b/a, and writes
every round's figures to FILE. Standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The figures compared, and whether larger is better.
FIGURES = [
    ("decode_b1_tok_s", True), ("decode_b1_ms_per_step", False),
    ("decode_b32_tok_s", True), ("train_tok_s", True), ("ppo_step_s", False), ("ppo_generate_s", False),
    ("ppo_train_s", False), ("ppo_peak_gib", False), ("train_peak_gib", False),
]


def run_all(binary, bundles, models, out):
    common = ["--hybrid-run", binary, "--bundles", bundles, "--models",
              models, "--out", out]
    for script, extra in (("generate.py", []), ("train.py", []),
                          ("ppo.py", ["--no-release-cache"])):
        p = subprocess.run([sys.executable, os.path.join(HERE, script)] +
                           common + extra, capture_output=True, text=True)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            sys.stdout.write(p.stderr[-2000:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bundles", required=True)
    ap.add_argument("--a", required=True, help="NAME=BIN[:DIR], the baseline")
    ap.add_argument("--b", required=True, help="NAME=BIN[:DIR], the candidate")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--models", default="opt-1.3b")
    ap.add_argument("--out")
    args = ap.parse_args()
    sides = []
    for side in (args.a, args.b):
        name, _, rest = side.partition("=")
        binary, _, bundles = rest.partition(":")
        if not name or not binary:
            ap.error("expected NAME=BIN[:DIR], got %r" % side)
        sides.append((name, (binary, bundles or args.bundles)))
    runs = {name: [] for name, _ in sides}
    for r in range(args.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        for name, (binary, bundles) in order:
            print("== round %d: %s" % (r + 1, name), flush=True)
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                os.unlink(f.name)
                run_all(binary, bundles, args.models, f.name)
                with open(f.name) as g:
                    runs[name].append(json.load(g))
    (a, _), (b, _) = sides
    print("\n| model | figure | %s | %s | %s/%s |" % (a, b, b, a))
    print("|---|---|---|---|---|")
    for model in args.models.split(","):
        for key, _ in FIGURES:
            va = [x[model][key] for x in runs[a] if key in x.get(model, {})]
            vb = [x[model][key] for x in runs[b] if key in x.get(model, {})]
            if not va or not vb:
                continue
            ma, mb = statistics.median(va), statistics.median(vb)
            print("| %s | %s | %.4g | %.4g | %.3f |" %
                  (model, key, ma, mb, mb / ma if ma else float("nan")))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(runs, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
