#!/usr/bin/env python3
"""Checks of `hybrid-run train` (standard library only).

  train_check.py tokens REF.safetensors OUT.safetensors
      writes OUT with REF's input_ids (the training data).
  train_check.py loss-down LOG FACTOR
      the loss of the last logged step is below the first's / FACTOR.
  train_check.py logprobs-mean OUT.safetensors REF.safetensors TOL
      the mean of OUT's logprobs is minus REF's loss within TOL relative.
  train_check.py same-names CKPT.safetensors MODEL.safetensors [--skip N]
                 [--dtype D]
      CKPT holds exactly MODEL's tensor names (but the --skip ones, tied
      weights HF does not save) with the same dtypes (or all D) and shapes.
  train_check.py optimizer-state OPTIMIZER.safetensors
      the f32 masters it holds and the loss scale, when it has them.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "tokens":
        st.write(args[1], {"input_ids": st.read(args[0])["input_ids"]})
        return 0
    if cmd == "loss-down":
        losses = [float(m.group(1)) for m in
                  re.finditer(r"train step \d+/\d+: loss ([0-9.]+)",
                              open(args[0]).read())]
        factor = float(args[1])
        ok = len(losses) >= 2 and losses[-1] < losses[0] / factor
        print("loss %s -> %s: %s" % (losses[0] if losses else "?",
                                     losses[-1] if losses else "?",
                                     "down" if ok else "NOT down enough"))
        return 0 if ok else 1
    if cmd == "same-names":
        skip, dtype = set(), None
        while "--skip" in args:
            i = args.index("--skip")
            skip.add(args[i + 1])
            del args[i:i + 2]
        if "--dtype" in args:
            i = args.index("--dtype")
            dtype = args[i + 1]
            del args[i:i + 2]
        ckpt, model = st.read(args[0]), st.read(args[1])
        want = {k: (dtype or v[0], v[1]) for k, v in model.items()
                if k not in skip}
        got = {k: (v[0], v[1]) for k, v in ckpt.items()}
        if got != want:
            print("names, dtypes or shapes differ:")
            for k in sorted(set(got) | set(want)):
                if got.get(k) != want.get(k):
                    print("  %s: ours %s, the model's %s" %
                          (k, got.get(k), want.get(k)))
            return 1
        print("%d tensors: the model's names, dtypes and shapes" % len(got))
        return 0
    if cmd == "optimizer-state":
        state = st.read(args[0])
        masters = [v[0] for k, v in state.items()
                   if k.startswith("opt.master.")]
        line = "%d masters (%s)" % (len(masters),
                                    ", ".join(sorted(set(masters))))
        if "opt.loss_scale" in state:
            line += ", loss scale %g" % st.values(state["opt.loss_scale"])[0]
        print(line)
        return 0
    if cmd == "logprobs-mean":
        # The mean of the per-token log-probs is minus the loss.
        lp = st.values(st.read(args[0])["logprobs"])
        loss = st.values(st.read(args[1])["loss"])[0]
        mean = sum(lp) / len(lp)
        rel = abs(mean + loss) / abs(loss)
        ok = rel <= float(args[2])
        print("mean log-prob %.7f, loss %.7f: relative error %.1e %s" %
              (mean, loss, rel, "ok" if ok else "FAIL"))
        return 0 if ok else 1
    sys.exit("unknown command %r" % cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
