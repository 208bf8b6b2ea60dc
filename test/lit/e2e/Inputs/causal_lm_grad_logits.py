#!/usr/bin/env python3
"""Writes the gradient of HF's causal-LM loss with respect to the logits.

  causal_lm_grad_logits.py REF.safetensors OUT.safetensors

REF is a fixture's ref.safetensors (input_ids [B,T], logits [B,T,V]); OUT
gets input_ids and grad_logits [B,T,V] f32: for t < T - 1,
(softmax(logits[b,t]) - onehot(input_ids[b,t+1])) / (B (T - 1)) (labels =
input_ids shifted left, none ignored, mean over them), zero at t = T - 1.
Fed to hybrid-run backward, it must give the fixture's grad.* (HF's
gradients of that loss). Standard library only.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402


def main(argv):
    ref = st.read(argv[1])
    ids = ref["input_ids"]
    batch, seq = ids[1]
    vocab = ref["logits"][1][2]
    labels = st.values(ids)
    logits = st.values(ref["logits"])
    count = batch * (seq - 1)
    grad = [0.0] * (batch * seq * vocab)
    for b in range(batch):
        for t in range(seq - 1):
            row = (b * seq + t) * vocab
            z = logits[row:row + vocab]
            top = max(z)
            e = [math.exp(v - top) for v in z]
            total = sum(e)
            for v in range(vocab):
                grad[row + v] = e[v] / total / count
            grad[row + labels[b * seq + t + 1]] -= 1.0 / count
    st.write(argv[2], {"input_ids": ids,
                       "grad_logits": st.pack("F32", [batch, seq, vocab],
                                              grad)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
