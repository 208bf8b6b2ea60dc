#!/usr/bin/env python3
"""Compares hybridc's loss and gradients with a fixture's reference.

  check_grads.py OUT.safetensors REF.safetensors [--loss-rtol R]
                 [--grad-rel-l2 G] [--zero-rel Z]
                 [--loss-only | --grads-only]
                 [--strip-prefix P] [--alias OURS=REF]... [--unmatched N]

OUT holds `loss` [1] and `grad.<HF name>` for every parameter (what
hybrid-run writes for @forward_loss_grad); REF is the fixture's
ref.safetensors (`loss`, `grad.*` from HuggingFace / PyTorch). The loss must
agree within R relative (default 1e-5), every reference gradient must be
present and agree within G relative L2 (|a - b| / |b|, default 1e-3).
A reference gradient whose norm is below Z (default 1e-6) of the largest one
is zero in exact arithmetic (OPT's key-projection bias: softmax does not see
a shift every key shares) and holds only roundoff, so relative error means
nothing there: ours must be roundoff as well, below that same bound (a bf16
bundle's roundoff is ~1e-3 of the largest gradient: pass a larger Z).
--grads-only checks the gradients of an OUT without a loss (what hybrid-run
backward writes).
Parameters of an ONNX export are named otherwise: --strip-prefix P drops P
from our names ("m." of torch.onnx's targets), --alias OURS=REF compares our
gradient OURS (after the prefix) with the reference's REF (a tied parameter
HF keeps under the other name), and --unmatched N says that exactly N
reference gradients have no parameter of that name in OUT (the exporter
folded them into a transformed tensor, val_N): those are listed, not
compared, and any other number fails.
Standard library only.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402


def main(argv):
    args = argv[1:]
    opts = {"--loss-rtol": 1e-5, "--grad-rel-l2": 1e-3, "--zero-rel": 1e-6,
            "--unmatched": 0}
    for flag in list(opts):
        if flag in args:
            i = args.index(flag)
            opts[flag] = float(args[i + 1])
            del args[i:i + 2]
    prefix = ""
    if "--strip-prefix" in args:
        i = args.index("--strip-prefix")
        prefix = args[i + 1]
        del args[i:i + 2]
    aliases = {}
    while "--alias" in args:
        i = args.index("--alias")
        ours, theirs = args[i + 1].split("=", 1)
        aliases[ours] = theirs
        del args[i:i + 2]
    loss_only = "--loss-only" in args
    if loss_only:
        args.remove("--loss-only")
    grads_only = "--grads-only" in args
    if grads_only:
        args.remove("--grads-only")
    out, ref = st.read(args[0]), st.read(args[1])
    if prefix or aliases:
        renamed = {}
        for key, tensor in out.items():
            if key.startswith("grad." + prefix):
                name = key[len("grad." + prefix):]
                key = "grad." + aliases.get(name, name)
            renamed[key] = tensor
        out = renamed
    failed = 0
    if not grads_only:
        a, b = st.values(out["loss"])[0], st.values(ref["loss"])[0]
        rel = abs(a - b) / abs(b)
        ok = rel <= opts["--loss-rtol"]
        failed += not ok
        print("loss %.7f vs %.7f: relative error %.1e %s" %
              (a, b, rel, "ok" if ok else "FAIL"))
    if loss_only:
        return 1 if failed else 0
    names = sorted(k for k in ref if k.startswith("grad."))
    largest = max(math.sqrt(sum(y * y for y in st.values(ref[n])))
                  for n in names)
    zero = opts["--zero-rel"] * largest
    worst, worst_name, zeros = 0.0, "", 0
    unmatched = [n for n in names if n not in out]
    allowed = int(opts["--unmatched"])
    if allowed and len(unmatched) != allowed:
        print("%d reference gradients have no parameter of their name, "
              "expected %d FAIL" % (len(unmatched), allowed))
        failed += 1
    for name in names:
        if name not in out:
            if not allowed:
                print("%s: missing" % name)
                failed += 1
            continue
        ga, gb = st.values(out[name]), st.values(ref[name])
        if len(ga) != len(gb):
            print("%s: %d values, the reference %d" % (name, len(ga), len(gb)))
            failed += 1
            continue
        err = math.sqrt(sum((x - y) ** 2 for x, y in zip(ga, gb)))
        norm = math.sqrt(sum(y * y for y in gb))
        if norm < zero:
            ours = math.sqrt(sum(x * x for x in ga))
            zeros += 1
            if ours >= zero:
                print("%s: zero in exact arithmetic (reference norm %.1e), "
                      "ours %.1e FAIL" % (name, norm, ours))
                failed += 1
            continue
        rel = err / norm if norm > 0 else err
        if rel > worst:
            worst, worst_name = rel, name
        if rel > opts["--grad-rel-l2"]:
            print("%s: relative L2 error %.1e FAIL" % (name, rel))
            failed += 1
    if allowed:
        print("not compared (no parameter of that name): %s" %
              ", ".join(n[len("grad."):] for n in unmatched))
    print("%d gradients, worst relative L2 error %.1e (%s)%s %s" %
          (len(names) - (len(unmatched) if allowed else 0), worst, worst_name,
           ", %d zero in exact arithmetic and roundoff in ours" % zeros
           if zeros else "", "ok" if not failed else "FAIL"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
