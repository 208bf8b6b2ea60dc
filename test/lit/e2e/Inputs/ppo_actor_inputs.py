#!/usr/bin/env python3
"""The PPO oracle's actor step as @ppo_actor_loss's inputs and reference.

  ppo_actor_inputs.py PPO.safetensors PROMPT INPUTS.safetensors REF.safetensors

PPO is a ../shared/fixtures/ppo oracle (DeepSpeed-Chat's step-3 maths);
PROMPT its prompt length (8). INPUTS gets what @ppo_actor_loss takes:
input_ids, attention_mask, and over [batch, seq - 1] (position t scores
token t + 1) old_logprobs (the oracle's logprobs), advantages (the oracle's
[batch, seq - PROMPT], zeros before) and action_mask (attention_mask[:, 1:]
with the prompt's positions, t < PROMPT - 1, zeroed). REF gets `loss` (the
oracle's actor_loss) and `grad.<HF name>` (its actor_grad.*), as
check_grads.py reads them. Standard library only.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402


def main(argv):
    oracle, prompt = st.read(argv[1]), int(argv[2])
    batch, seq = oracle["input_ids"][1]
    start = prompt - 1
    mask = st.rows(oracle["attention_mask"])
    adv = st.rows(oracle["advantages"])
    actions, advantages = [], []
    for b in range(batch):
        for t in range(seq - 1):
            actions.append(float(mask[b][t + 1]) if t >= start else 0.0)
            advantages.append(adv[b][t - start] if t >= start else 0.0)
    shape = [batch, seq - 1]
    inputs = {
        "input_ids": oracle["input_ids"],
        "attention_mask": oracle["attention_mask"],
        "old_logprobs": oracle["logprobs"],
        "advantages": st.pack("F32", shape, advantages),
        "action_mask": st.pack("F32", shape, actions),
    }
    st.write(argv[3], inputs)
    ref = {"loss": oracle["actor_loss"]}
    for name, tensor in oracle.items():
        if name.startswith("actor_grad."):
            ref["grad." + name[len("actor_grad."):]] = tensor
    st.write(argv[4], ref)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
