#!/usr/bin/env python3
"""PPO-shaped step benchmark on one GPU: hybrid-run ppo-step --random-weights
on the benchmark models' PPO bundles (MODEL-ppo.hyb: bf16 weights, f32
masters, AdamW, generation kept; bench/prepare.sh compiles opt-1.3b's), at
the shape ../shared/bench/anchor_ppo_step_h200.py measures: 32 prompts of
256 random tokens, 256 sampled new tokens (temperature 1, no top-k/top-p,
no early stop), then one training pass over the 32 x 512 sequences in 4
micro-batches of 8 and one AdamW step (lr 1e-6).

  bench/ppo.py --hybrid-run BIN --bundles DIR [--models m1,m2]
               [--batch B] [--prompt-len P] [--new-tokens N]
               [--micro-batch M] [--repeat R] [--timeout S] [--device D]
               [--no-release-cache] [--out FILE.json]

Per model two runs of one warm-up step and R timed steps (the median
reported): as is, and with --release-cache (the KV cache let go when
generation ends and taken again by the next). One line each, and into
FILE.json (entries already there are kept: generate.py's and train.py's
file) per model:
  ppo_step_s          the median step, device synchronised at its ends
  ppo_generate_s      its generation (prefill + 256 decode steps)
  ppo_train_s         its training pass (4 micro-batches + the AdamW step)
  switch_ms           its eval() and train() calls together
  switch_bytes        the most bytes the switches of one step allocated and
                      copied on the device (0: one weight store, nothing moves)
  ppo_gen_tok_s       generated tokens per second (batch x new / generate)
  ppo_loss_first/last the mean micro-batch loss of the first and last step
  ppo_peak_gib        the device allocator's high-water mark over the run
  ppo_peak_gib_release_cache  the same with --release-cache
  ppo_step_s_release_cache    the median step with --release-cache
The anchor's numbers to compare with: anchor_ppo.json's ppo_step_eager_s and
ppo_step_twocopy_s (bench/gpu.sh ANCHORS=ppo). A model that fails prints
"FAIL  model ppo: ..." and the others still run; the exit status is 1 if
any failed. Standard library only.
"""
import argparse
import os
import re
import sys

from benchlib import (add_common_arguments, load_results, run_line,
                      run_models, write_results)

LINE = re.compile(
    r"ppo-step (?P<model>.+?): batch (?P<batch>\d+), prompt (?P<prompt>\d+), "
    r"new (?P<new>\d+), micro-batch (?P<micro>\d+): step (?P<step>[0-9.]+) s "
    r"\(generate (?P<gen>[0-9.]+) s, train (?P<train>[0-9.]+) s, switch "
    r"(?P<switch>[0-9.]+) ms, switch bytes (?P<bytes>\d+)\); generate "
    r"(?P<tps>[0-9.]+) tok/s; loss (?P<loss0>\S+) -> (?P<loss1>\S+); peak "
    r"(?P<gib>[0-9.]+) GiB")


def run_once(args, model, release):
    bundle = os.path.join(args.bundles, "%s-ppo.hyb" % model)
    if not os.path.exists(bundle):
        raise RuntimeError("no %s (run bench/prepare.sh)" % bundle)
    cmd = [args.hybrid_run, "ppo-step", bundle, "--random-weights", "1",
           "--device", args.device, "--batch", str(args.batch),
           "--prompt-len", str(args.prompt_len), "--new-tokens",
           str(args.new_tokens), "--micro-batch", str(args.micro_batch),
           "--repeat", str(args.repeat)]
    if release:
        cmd.append("--release-cache")
    return run_line(cmd, LINE, args.timeout).groupdict()


def run_model(args, model):
    v = run_once(args, model, release=False)
    r = {
        "ppo_step_s": float(v["step"]),
        "ppo_generate_s": float(v["gen"]),
        "ppo_train_s": float(v["train"]),
        "switch_ms": float(v["switch"]),
        "switch_bytes": int(v["bytes"]),
        "ppo_gen_tok_s": float(v["tps"]),
        "ppo_loss_first": float(v["loss0"]),
        "ppo_loss_last": float(v["loss1"]),
        "ppo_peak_gib": float(v["gib"]),
        "ppo_shape": "%sx(%s+%s), micro-batch %s" %
                     (v["batch"], v["prompt"], v["new"], v["micro"]),
    }
    if args.release_cache:
        w = run_once(args, model, release=True)
        r["ppo_peak_gib_release_cache"] = float(w["gib"])
        r["ppo_step_s_release_cache"] = float(w["step"])
        r["switch_bytes"] = max(r["switch_bytes"], int(w["bytes"]))
    return r


def main():
    ap = argparse.ArgumentParser()
    add_common_arguments(ap, models="opt-1.3b", timeout=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--no-release-cache", dest="release_cache",
                    action="store_false",
                    help="skip the second run with --release-cache")
    args = ap.parse_args()
    results = load_results(args.out)

    def record(model, r):
        released = r.get("ppo_peak_gib_release_cache")
        print("%-10s ppo %s  step %7.3f s (generate %7.3f s, train %7.3f s, "
              "switch %.3f ms, %d bytes)  %7.0f tok/s  loss %.3f -> %.3f  "
              "peak %.2f GiB%s" %
              (model, r["ppo_shape"], r["ppo_step_s"], r["ppo_generate_s"],
               r["ppo_train_s"], r["switch_ms"], r["switch_bytes"],
               r["ppo_gen_tok_s"], r["ppo_loss_first"], r["ppo_loss_last"],
               r["ppo_peak_gib"],
               "" if released is None else
               " (%.2f GiB releasing the KV cache)" % released),
              flush=True)
        results.setdefault(model, {}).update(r)

    status = run_models(args, "ppo", run_model, record)
    write_results(args.out, results)
    return status


if __name__ == "__main__":
    sys.exit(main())
