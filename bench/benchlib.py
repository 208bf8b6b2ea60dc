"""What bench/generate.py, bench/train.py and bench/ppo.py share: running
hybrid-run for its one result line, and the results file they merge into
(each script adds its own keys to a model's entry and keeps the others, so
they may share one file). Standard library only."""
import json
import os
import subprocess


def run_line(cmd, line, timeout=None):
    """Runs cmd and returns the match of `line` (a compiled regex) in its
    stderr. Raises RuntimeError naming the command when it runs past
    `timeout` seconds, fails, or prints no such line."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError("%s: no result within %d s" %
                           (" ".join(cmd), timeout))
    m = line.search(p.stderr)
    if p.returncode != 0 or not m:
        raise RuntimeError("%s failed (exit %d): %s" %
                           (" ".join(cmd), p.returncode, p.stderr.strip()))
    return m


def load_results(path):
    """The results already in `path` (per model), or none."""
    if path and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def write_results(path, results):
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)


def add_common_arguments(ap, models, timeout):
    """The options every per-model timing script takes: --hybrid-run,
    --bundles, --models (default `models`), --repeat, --timeout (default
    `timeout` seconds), --device, --out."""
    ap.add_argument("--hybrid-run", required=True)
    ap.add_argument("--bundles", required=True)
    ap.add_argument("--models", default=models)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=timeout,
                    help="seconds per run before the model counts as failed")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out")


def run_models(args, what, run_model, record):
    """run_model(args, model) for each of --models, then record(model,
    result); a model that fails prints "FAIL  <model> <what>: <error>" and
    the others still run. Returns the exit status: 1 if any failed."""
    failed = 0
    for model in args.models.split(","):
        try:
            r = run_model(args, model)
        except (RuntimeError, OSError) as err:
            print("FAIL  %s %s: %s" % (model, what, err), flush=True)
            failed += 1
            continue
        record(model, r)
    return 1 if failed else 0
