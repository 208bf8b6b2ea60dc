#!/usr/bin/env python3
"""Generation benchmark on one GPU: hybrid-run generate on bundles compiled
from a config.json alone (random weights), the cases of the anchors in
../shared/bench (prompt 128, 128 new greedy tokens at batch 1 and 32, no
early stop; the PPO-shaped batch of 32 prompts of 256 tokens with 256
sampled tokens).

  bench/generate.py --hybrid-run BIN --bundles DIR [--models m1,m2]
                    [--repeat R] [--out FILE.json]

DIR holds MODEL.hyb per model (bench/prepare.sh writes them). Prints one
line per case and writes {"<model>": {"decode_b1_tok_s": ..., ...}} to
FILE.json (keys of other scripts already there are kept). tok/s counts the new tokens of the whole batch over the whole
generate() call (prefill included), as the anchors count them; decode-only
figures (per step) and the time to first token (the prefill) come beside.
Standard library only.
"""
import argparse
import re
import sys

from benchlib import load_results, run_line, write_results

CASES = [
    # name, batch, prompt, new tokens, sampled
    ("b1", 1, 128, 128, False),
    ("b32", 32, 128, 128, False),
    ("ppo", 32, 256, 256, True),
]

LINE = re.compile(
    r"prefill (?P<prefill>[0-9.]+) ms, decode (?P<step>[0-9.]+) ms/step, "
    r"(?P<decode_tps>[0-9.]+) tokens/s; end to end (?P<total>[0-9.]+) ms, "
    r"(?P<tps>[0-9.]+) tokens/s; peak (?P<peak>[0-9.]+) GiB")

GRAPH = re.compile(r"decode graph of ([0-9]+) operations")


def run_case(hybrid_run, bundle, batch, prompt, new, sampled, repeat, extra):
    cmd = [hybrid_run, "generate", bundle, "--random-weights", "1",
           "--device", "cuda", "--batch", str(batch), "--prompt-len",
           str(prompt), "--max-new-tokens", str(new), "--repeat",
           str(repeat)] + extra
    if sampled:
        cmd += ["--temperature", "1.0", "--seed", "7"]
    m = run_line(cmd, LINE)
    r = {k: float(v) for k, v in m.groupdict().items()}
    g = GRAPH.search(m.string)
    r["graph_ops"] = int(g.group(1)) if g else 0
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hybrid-run", required=True)
    ap.add_argument("--bundles", required=True)
    ap.add_argument("--models", default="opt-1.3b,gpt2-124m,llama-1b")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-cuda-graph", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    extra = ["--no-cuda-graph"] if args.no_cuda_graph else []
    results, failed = load_results(args.out), 0
    for model in args.models.split(","):
        bundle = "%s/%s.hyb" % (args.bundles, model)
        r = results.setdefault(model, {})
        for name, batch, prompt, new, sampled in CASES:
            try:
                m = run_case(args.hybrid_run, bundle, batch, prompt, new,
                             sampled, args.repeat, extra)
            except RuntimeError as err:
                print("FAIL  %s %s: %s" % (model, name, err), flush=True)
                failed += 1
                continue
            print("%-10s %-4s prefill %8.2f ms  decode %7.3f ms/step  "
                  "%9.0f tok/s (decode only %9.0f)  total %8.1f ms  "
                  "peak %.2f GiB  graph %d ops" %
                  (model, name, m["prefill"], m["step"], m["tps"],
                   m["decode_tps"], m["total"], m["peak"], m["graph_ops"]),
                  flush=True)
            if name == "ppo":
                r["ppo_generate_s"] = m["total"] / 1000
                r["ppo_generate_tok_s"] = m["tps"]
            else:
                r["decode_%s_tok_s" % name] = m["tps"]
                r["decode_%s_ms_per_step" % name] = m["step"]
                r["decode_%s_only_tok_s" % name] = m["decode_tps"]
                r["ttft_%s_ms" % name] = m["prefill"]
            r["decode_%s_graph_ops" % name] = m["graph_ops"]
            r["peak_gib"] = max(r.get("peak_gib", 0), m["peak"])
    write_results(args.out, results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
