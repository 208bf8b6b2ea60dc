#!/usr/bin/env python3
"""Checkpoints and checks for value-head bundles (hybridc --head value).

  value_head.py oracle OUT.safetensors PPO.safetensors critic|reward [--rtol R]
      OUT is hybrid-run forward's output on the PPO oracle's input_ids and
      attention_mask. critic: OUT's values [B, T] without the last position
      against the oracle's `values` [B, T - 1]; reward: OUT's scores [B]
      against `reward_scores`. Passes when max |a - b| <= R max |b| (default
      1e-4).
  value_head.py checkpoint MODELS.safetensors ROLE STYLE OUT.safetensors
      ROLE's weights of the oracle's value models (ROLE.trunk.<base name>,
      ROLE.v_head.weight) written as another checkpoint would name them:
      STYLE base (<base name>, v_head.weight: what the bundle saves),
      causal-lm:PREFIX (PREFIX<base name> and an lm_head.weight a causal
      LM's checkpoint holds, v_head.weight) or deepspeed (DeepSpeed-Chat's
      RewardModel: rwtranformer.<base name>, v_head.weight).
  value_head.py critic-grads PPO.safetensors IN.safetensors REF.safetensors
      IN gets input_ids, attention_mask and grad_values [B, T]: d critic_loss
      / d values of the oracle's clipped value loss. At the oracle's point the
      critic's values are the old values, so the clip is inactive and both
      branches of the max are equal: d/dv = (v - returns) m / sum(m) on the
      answer's positions (t >= P - 1, t < T - 1), 0 elsewhere. REF gets the
      oracle's critic_grad.* as grad.<base name> for check_grads.py.
  value_head.py from-lm MODEL_DIR REF.safetensors K OUT.safetensors EXP.safetensors
      A value head that reads one logit: MODEL_DIR's causal-LM checkpoint with
      v_head.weight = row K of its LM head (lm_head.weight or embed_out.weight,
      else the tied embedding table), so its values are REF's logits[..., K]
      and its scores their last position (no mask). EXP gets both.
Standard library only.
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402


def relative_error(ours, ref):
    worst = max(abs(a - b) for a, b in zip(ours, ref))
    return worst / max(abs(b) for b in ref)


def oracle(args):
    out, ppo, role = st.read(args[0]), st.read(args[1]), args[2]
    rtol = float(args[args.index("--rtol") + 1]) if "--rtol" in args else 1e-4
    if role == "critic":
        batch, seq = out["values"][1]
        values = st.values(out["values"])
        ours = [values[b * seq + t] for b in range(batch)
                for t in range(seq - 1)]
        ref, what = st.values(ppo["values"]), "values[:, :-1] [%d,%d]" % (
            batch, seq - 1)
    else:
        ours, ref = st.values(out["scores"]), st.values(ppo["reward_scores"])
        what = "scores [%d]" % len(ref)
    if len(ours) != len(ref):
        print("%s: %d values, the oracle %d FAIL" % (what, len(ours), len(ref)))
        return 1
    rel = relative_error(ours, ref)
    ok = rel <= rtol
    print("%s %s: max |a-b| / max |b| = %.1e %s" % (role, what, rel,
                                                     "ok" if ok else "FAIL"))
    return 0 if ok else 1


def checkpoint(args):
    models, role, style, path = st.read(args[0]), args[1], args[2], args[3]
    trunk, out = role + ".trunk.", {}
    for name, tensor in models.items():
        if name == role + ".v_head.weight":
            out["v_head.weight"] = tensor
        elif name.startswith(trunk):
            base = name[len(trunk):]
            if style == "base":
                out[base] = tensor
            elif style == "deepspeed":
                out["rwtranformer." + base] = tensor
            elif style.startswith("causal-lm:"):
                out[style[len("causal-lm:"):] + base] = tensor
            else:
                raise SystemExit("unknown style " + style)
    if style.startswith("causal-lm:"):
        # A causal LM's head, which a value model ignores.
        dim = out["v_head.weight"][1][1]
        rng = random.Random(0)
        out["lm_head.weight"] = st.pack(
            "F32", [8, dim], [rng.uniform(-1, 1) for _ in range(8 * dim)])
    st.write(path, out)
    return 0


def critic_grads(args):
    ppo = st.read(args[0])
    batch, seq = ppo["input_ids"][1]
    answer = ppo["returns"][1][1]
    start = seq - 1 - answer  # P - 1: the first position whose next is answer
    mask = st.values(ppo["attention_mask"])
    values = st.values(ppo["values"])  # [B, T - 1]
    returns = st.values(ppo["returns"])  # [B, answer]
    m = [[mask[b * seq + t + 1] for t in range(start, seq - 1)]
         for b in range(batch)]
    total = sum(sum(row) for row in m)
    grad = [0.0] * (batch * seq)
    for b in range(batch):
        for i, t in enumerate(range(start, seq - 1)):
            v = values[b * (seq - 1) + t]
            grad[b * seq + t] = (v - returns[b * answer + i]) * m[b][i] / total
    st.write(args[1], {"input_ids": ppo["input_ids"],
                       "attention_mask": ppo["attention_mask"],
                       "grad_values": st.pack("F32", [batch, seq], grad)})
    ref = {}
    for name, tensor in ppo.items():
        if name.startswith("critic_grad.trunk."):
            ref["grad." + name[len("critic_grad.trunk."):]] = tensor
        elif name.startswith("critic_grad."):
            ref["grad." + name[len("critic_grad."):]] = tensor
    st.write(args[2], ref)
    return 0


def from_lm(args):
    folder, ref, k = args[0], st.read(args[1]), int(args[2])
    model = st.read(os.path.join(folder, "model.safetensors"))
    heads = [n for n in ("lm_head.weight", "embed_out.weight") if n in model]
    if not heads:
        heads = [n for n in model if n.endswith(
            ("wte.weight", "embed_tokens.weight", "word_embeddings.weight",
             "embed_in.weight"))]
    dtype, (vocab, dim), raw = model[heads[0]]
    assert dtype == "F32", dtype
    row = raw[k * dim * 4:(k + 1) * dim * 4]
    model["v_head.weight"] = ["F32", [1, dim], row]
    st.write(args[3], model)
    batch, seq, vocab = ref["logits"][1]
    logits = st.values(ref["logits"])
    values = [logits[(b * seq + t) * vocab + k] for b in range(batch)
              for t in range(seq)]
    scores = [values[b * seq + seq - 1] for b in range(batch)]
    st.write(args[4], {"values": st.pack("F32", [batch, seq], values),
                       "scores": st.pack("F32", [batch], scores)})
    return 0


def main(argv):
    commands = {"oracle": oracle, "checkpoint": checkpoint,
                "critic-grads": critic_grads, "from-lm": from_lm}
    return commands[argv[1]](argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
