#!/usr/bin/env python3
"""Training benchmark on one GPU: hybrid-run train-step --random-weights on
the benchmark models' training bundles (bf16 weights, f32 masters, AdamW:
MODEL-train.hyb, which bench/prepare.sh compiles from config.json alone),
at the anchors' shape: batch 8 x seq 512 of random tokens.

  bench/train.py --hybrid-run BIN --bundles DIR [--models m1,m2]
                 [--batch B] [--seq T] [--repeat R] [--peak-flops F]
                 [--timeout S] [--device D] [--out FILE.json]

Per model: one warm-up step, then R timed steps (forward, backward, AdamW;
the batch written and the loss read back each step); one line each, and
into FILE.json (entries already there are kept, so it may be generate.py's
file) per model:
  train_tok_s         tokens per second of the median step
  train_mfu           model FLOPs / median step / F (default 989.4e12, the
                      H200's dense bf16 peak); model FLOPs = 6 x trainable
                      parameters x tokens + attention's 12 x layers x width
                      x T per token (hybrid-run reads layers and width off
                      the bundle's forward pass)
  train_mfu_6n_vs747  6 x parameters x tokens / median step / 747e12: the
                      anchors' own MFU (anchor_compiled_h200.py: 6N only,
                      against the H200's measured bf16 GEMM rate)
  step_ms, step_best_ms, train_flops_per_step, train_loss_first/last
  train_peak_gib      the device allocator's high-water mark of memory in
                      use during the run (weights, masters, moments,
                      workspace; not what it keeps cached)
  peak_gib            the larger of train_peak_gib and the entry's
                      peak_gib already in FILE (generate.py's)
A model that fails prints "FAIL  model: ..." and the others still run;
the exit status is 1 if any failed. Standard library only.
"""
import argparse
import os
import re
import sys

from benchlib import (add_common_arguments, load_results, run_line,
                      run_models, write_results)

LINE = re.compile(
    r"train-step (?P<model>.+?): (?P<params>\S+) trainable params, "
    r"(?P<batch>\d+)x(?P<seq>\d+) tokens: step (?P<ms>[0-9.]+) ms \(median of "
    r"\d+; best (?P<best>[0-9.]+) ms\), (?P<tps>[0-9.]+) tokens/s; "
    r"model (?P<flops>\S+) FLOP/step \(6N (?P<dense>\S+) \+ attention "
    r"(?P<attn>[^)]+)\), (?P<rate>\S+) FLOP/s, MFU (?P<mfu>\S+) of \S+ "
    r"FLOP/s; loss (?P<loss0>\S+) -> (?P<loss1>\S+); peak (?P<gib>\S+) GiB")

ANCHOR_PEAK = 747e12  # ../shared/bench/ANCHORS.md: bf16 GEMM 8192^3


def run_model(args, model):
    bundle = os.path.join(args.bundles, "%s-train.hyb" % model)
    if not os.path.exists(bundle):
        raise RuntimeError("no %s (run bench/prepare.sh)" % bundle)
    cmd = [args.hybrid_run, "train-step", bundle, "--random-weights", "1",
           "--device", args.device, "--batch", str(args.batch), "--seq",
           str(args.seq), "--repeat", str(args.repeat), "--peak-flops",
           str(args.peak_flops)]
    m = run_line(cmd, LINE, args.timeout)
    v = m.groupdict()
    ms = float(v["ms"])
    return {
        "train_tok_s": float(v["tps"]),
        "train_mfu": float(v["mfu"]),
        "train_mfu_6n_vs747": float(v["dense"]) / (ms / 1000) / ANCHOR_PEAK,
        "step_ms": ms,
        "step_best_ms": float(v["best"]),
        "train_flops_per_step": float(v["flops"]),
        "train_loss_first": float(v["loss0"]),
        "train_loss_last": float(v["loss1"]),
        "peak_gib": float(v["gib"]),
        "train_batch": int(v["batch"]),
        "train_seq": int(v["seq"]),
    }


def main():
    ap = argparse.ArgumentParser()
    add_common_arguments(ap, models="opt-1.3b,gpt2-124m,llama-1b", timeout=180)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--peak-flops", type=float, default=989.4e12)
    args = ap.parse_args()
    results = load_results(args.out)

    def record(model, r):
        print("%-10s train %dx%d  step %8.2f ms (best %8.2f)  %9.0f tok/s  "
              "MFU %.3f (6N vs 747T: %.3f)  %.3g TFLOP/step  loss %.3f -> "
              "%.3f  peak %.2f GiB" %
              (model, r["train_batch"], r["train_seq"], r["step_ms"],
               r["step_best_ms"], r["train_tok_s"], r["train_mfu"],
               r["train_mfu_6n_vs747"], r["train_flops_per_step"] / 1e12,
               r["train_loss_first"], r["train_loss_last"], r["peak_gib"]),
              flush=True)
        entry = results.setdefault(model, {})
        train_peak = r.pop("peak_gib")
        entry.update(r)
        entry["train_peak_gib"] = train_peak
        # A generate.py entry's peak_gib is the generation's: keep the larger.
        entry["peak_gib"] = max(entry.get("peak_gib", 0), train_peak)

    status = run_models(args, "train", run_model, record)
    write_results(args.out, results)
    return status


if __name__ == "__main__":
    sys.exit(main())
