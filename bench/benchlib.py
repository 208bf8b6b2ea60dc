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
