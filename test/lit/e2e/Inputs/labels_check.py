#!/usr/bin/env python3
"""Inputs and checks of the causal-LM loss's labels (standard library only).

  labels_check.py batches REF.safetensors DIR PAD PROMPT
      writes, from REF's input_ids [B, T], into DIR:
        padded.safetensors   input_ids, attention_mask (row 0's first PAD
                             positions 0: left padding)
        answers.safetensors  input_ids, labels (input_ids, -100 on every
                             row's first PROMPT positions: answer-only SFT)
        none.safetensors     input_ids, labels all -100
        data.safetensors     input_ids, attention_mask and labels: the
                             padding and the prompt both -100
  labels_check.py counted-mean OUT.safetensors LOGPROBS.safetensors
                  INPUTS.safetensors TOL
      OUT's loss is the mean of -LOGPROBS' logprobs [B, T - 1] over the
      positions t whose label t + 1 counts, within TOL relative. The labels
      are INPUTS' labels, else its input_ids with -100 where its
      attention_mask is 0 (HF's input_ids.masked_fill(mask == 0, -100)).
  labels_check.py logged-loss LOG OUT.safetensors TOL
      the loss of LOG's first `train step` line is OUT's within TOL.
  labels_check.py zero OUT.safetensors
      OUT's loss is +0 and every grad.* is zero (not NaN).
  labels_check.py with-pad-token MODEL DIR ID
      DIR: MODEL's config.json with pad_token_id ID, its weights linked.
  labels_check.py padding-row OURS.safetensors BASE.safetensors NAME ID
      grad.NAME's row ID is zero in OURS and not in BASE; every other row
      and every other gradient is the same bits in both.
  labels_check.py same-grads A.safetensors B.safetensors
      every grad.* is the same bits in both.
"""
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402

IGNORE = -100


def labels_of(inputs):
    """The labels the loss scores, [B][T]."""
    if "labels" in inputs:
        return st.rows(inputs["labels"])
    ids = st.rows(inputs["input_ids"])
    if "attention_mask" not in inputs:
        return ids
    mask = st.rows(inputs["attention_mask"])
    return [[i if m else IGNORE for i, m in zip(r, mr)]
            for r, mr in zip(ids, mask)]


def batches(ref, out, pad, prompt):
    ids = st.read(ref)["input_ids"]
    rows = st.rows(ids)
    b, t = ids[1]
    mask = [[0 if r == 0 and c < pad else 1 for c in range(t)]
            for r in range(b)]
    answers = [[IGNORE if c < prompt else v for c, v in enumerate(row)]
               for row in rows]
    both = [[IGNORE if not m else v for v, m in zip(row, mr)]
            for row, mr in zip(answers, mask)]

    def i64(values):
        return st.pack("I64", [b, t], [v for row in values for v in row])

    st.write(os.path.join(out, "padded.safetensors"),
             {"input_ids": ids, "attention_mask": i64(mask)})
    st.write(os.path.join(out, "answers.safetensors"),
             {"input_ids": ids, "labels": i64(answers)})
    st.write(os.path.join(out, "none.safetensors"),
             {"input_ids": ids, "labels": i64([[IGNORE] * t] * b)})
    st.write(os.path.join(out, "data.safetensors"),
             {"input_ids": ids, "attention_mask": i64(mask),
              "labels": i64(both)})
    return 0


def counted_mean(out, logprobs, inputs, tol):
    loss = st.values(st.read(out)["loss"])[0]
    lp = st.rows(st.read(logprobs)["logprobs"])
    labels = labels_of(st.read(inputs))
    picked = [-lp[r][c] for r, row in enumerate(labels)
              for c in range(len(row) - 1) if row[c + 1] != IGNORE]
    mean = sum(picked) / len(picked)
    rel = abs(loss - mean) / abs(mean)
    ok = rel <= tol
    print("loss %.6f, mean -logprob over %d counted positions %.6f: "
          "relative error %.2e %s" % (loss, len(picked), mean, rel,
                                      "ok" if ok else "FAIL"))
    return 0 if ok else 1


def logged_loss(log, out, tol):
    m = re.search(r"train step 1/\d+: loss ([0-9.]+)", open(log).read())
    loss = st.values(st.read(out)["loss"])[0]
    ok = m is not None and abs(float(m.group(1)) - loss) <= tol
    print("logged %s, loss %.6f: %s" % (m.group(1) if m else "?", loss,
                                        "ok" if ok else "FAIL"))
    return 0 if ok else 1


def zero(out):
    t = st.read(out)
    loss = st.values(t["loss"])[0]
    grads = [k for k in t if k.startswith("grad.")]
    bad = [k for k in grads if any(v != 0 for v in st.values(t[k]))]
    ok = loss == 0 and math.copysign(1, loss) > 0 and grads and not bad
    print("loss %r, %d gradients, %d not zero%s: %s" %
          (loss, len(grads), len(bad), (" (%s)" % ", ".join(bad)) if bad
           else "", "ok" if ok else "FAIL"))
    return 0 if ok else 1


def with_pad_token(model, out, token):
    os.makedirs(out, exist_ok=True)
    config = json.load(open(os.path.join(model, "config.json")))
    config["pad_token_id"] = token
    json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=2)
    link = os.path.join(out, "model.safetensors")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(os.path.join(model, "model.safetensors")),
                   link)
    return 0


def grads_of(path):
    return {k: v for k, v in st.read(path).items() if k.startswith("grad.")}


def padding_row(ours, base, name, row):
    a, b = grads_of(ours), grads_of(base)
    if set(a) != set(b):
        print("gradient names differ: FAIL")
        return 1
    key = "grad." + name
    width = a[key][1][1]
    lo, hi = row * width * 4, (row + 1) * width * 4
    zero_row = all(v == 0 for v in st.values(["F32", [width], a[key][2][lo:hi]]))
    base_row = any(v != 0 for v in st.values(["F32", [width], b[key][2][lo:hi]]))
    rest = a[key][2][:lo] == b[key][2][:lo] and a[key][2][hi:] == b[key][2][hi:]
    others = [k for k in a if k != key and a[k][2] != b[k][2]]
    ok = zero_row and base_row and rest and not others
    print("%s row %d: %s here, %s without padding_idx; other rows %s; "
          "%d other gradients, %d differ: %s" %
          (name, row, "zero" if zero_row else "NOT zero",
           "not zero" if base_row else "zero", "same" if rest else "DIFFER",
           len(a) - 1, len(others), "ok" if ok else "FAIL"))
    return 0 if ok else 1


def same_grads(pa, pb):
    a, b = grads_of(pa), grads_of(pb)
    differ = sorted(k for k in a if k not in b or a[k][2] != b[k][2])
    ok = set(a) == set(b) and a and not differ
    print("%d gradients, %d differ: %s" % (len(a), len(differ),
                                          "ok" if ok else "FAIL"))
    return 0 if ok else 1


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "batches":
        return batches(args[0], args[1], int(args[2]), int(args[3]))
    if cmd == "counted-mean":
        return counted_mean(args[0], args[1], args[2], float(args[3]))
    if cmd == "logged-loss":
        return logged_loss(args[0], args[1], float(args[2]))
    if cmd == "zero":
        return zero(args[0])
    if cmd == "with-pad-token":
        return with_pad_token(args[0], args[1], int(args[2]))
    if cmd == "padding-row":
        return padding_row(args[0], args[1], args[2], int(args[3]))
    if cmd == "same-grads":
        return same_grads(args[0], args[1])
    print("unknown command " + cmd)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
