#!/usr/bin/env python3
"""@grpo_loss's inputs and its loss computed here, from the policy's own
log-probabilities.

  grpo_inputs.py LOGPROBS.safetensors PPO.safetensors PROMPT GROUP BETA
                 PER_SEQUENCE INPUTS.safetensors EXPECTED

LOGPROBS holds `logprobs` [B, S-1] (hybrid-run forward --executable
logprobs on PPO's input_ids and attention_mask); PPO is a fixtures/ppo
oracle (its sequences), PROMPT its prompt length. INPUTS gets input_ids,
attention_mask, old_logprobs (logprobs shifted by a fixed pattern, so the
ratios leave 1 and some clip), ref_logprobs (another shift, for the KL),
advantages (GRPO's of made-up scores in groups of GROUP, broadcast over
tokens, as TRL's GRPOTrainer computes them: std unbiased, eps 1e-4) and
action_mask. EXPECTED gets the loss as TRL computes it, in float64: per
token max(-A r, -A clip(r, 0.8, 1.2)) + BETA (exp(ref - lp) - (ref - lp) -
1), averaged per sequence (PER_SEQUENCE 1) or per token (0).

  grpo_inputs.py check OUT.safetensors EXPECTED

compares OUT's `loss` with EXPECTED: "loss A vs B: relative error E ok"
within 1e-5, else FAIL and exit 1. Standard library only.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402


def check(argv):
    a = st.values(st.read(argv[2])["loss"])[0]
    with open(argv[3]) as f:
        b = float(f.read())
    rel = abs(a - b) / abs(b)
    ok = rel <= 1e-5
    print("loss %.7f vs %.7f: relative error %.1e %s" %
          (a, b, rel, "ok" if ok else "FAIL"))
    return 0 if ok else 1


def main(argv):
    if argv[1] == "check":
        return check(argv)
    lp = st.rows(st.read(argv[1])["logprobs"])
    oracle = st.read(argv[2])
    prompt, group, beta = int(argv[3]), int(argv[4]), float(argv[5])
    per_sequence = argv[6] == "1"
    mask = st.rows(oracle["attention_mask"])
    batch, width = len(lp), len(lp[0])
    start = prompt - 1
    scores = [0.3 + 0.7 * b * ((-1) ** b) for b in range(batch)]
    adv = []
    for g in range(0, batch, group):
        s = scores[g:g + group]
        mean = sum(s) / len(s)
        std = math.sqrt(sum((x - mean) ** 2 for x in s) / (len(s) - 1))
        adv += [(x - mean) / (std + 1e-4) for x in s]
    old, ref, act, a_full = [], [], [], []
    for b in range(batch):
        for t in range(width):
            old.append(lp[b][t] + 0.15 * math.sin(1.7 * t + b))
            ref.append(lp[b][t] + 0.1 * math.cos(0.9 * t - b))
            act.append(1.0 if t >= start and mask[b][t + 1] else 0.0)
            a_full.append(adv[b])
    # The loss in float64 from the float32 inputs.
    f32 = lambda v: st.values(st.pack("F32", [len(v)], v))  # noqa: E731
    old, ref, a_full = f32(old), f32(ref), f32(a_full)
    rows = []
    total = count = 0.0
    for b in range(batch):
        s = n = 0.0
        for t in range(width):
            i = b * width + t
            if not act[i]:
                continue
            x = lp[b][t]
            r = math.exp(x - old[i])
            A = a_full[i]
            pg = max(-A * r, -A * min(max(r, 0.8), 1.2))
            d = ref[i] - x
            s += pg + beta * (math.exp(d) - d - 1)
            n += 1
        rows.append(s / n)
        total += s
        count += n
    loss = sum(rows) / batch if per_sequence else total / count
    shape = [batch, width]
    st.write(argv[7], {
        "input_ids": oracle["input_ids"],
        "attention_mask": oracle["attention_mask"],
        "old_logprobs": st.pack("F32", shape, old),
        "ref_logprobs": st.pack("F32", shape, ref),
        "advantages": st.pack("F32", shape, a_full),
        "action_mask": st.pack("F32", shape, act),
    })
    with open(argv[8], "w") as f:
        f.write("%.9g\n" % loss)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
