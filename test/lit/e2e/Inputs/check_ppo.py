#!/usr/bin/env python3
"""Compares hybrid-rlhf ppo-step's output with a PPO oracle.

  check_ppo.py OUT.safetensors ORACLE.safetensors [--logits-after-atol A]

ORACLE is ../shared/fixtures/ppo/ppo_<arch>.safetensors (DeepSpeed-Chat's
step-3 maths in float64, saved float32). Issue 26's bounds: log-probs,
values, scores, rewards, advantages, returns and both losses within 1e-4
relative error (|a - b| / max|b| over the tensor), every gradient within
1e-3 relative L2 (|a - b| / |b|; one whose norm is below 1e-6 of the
largest is zero in exact arithmetic and must be roundoff in ours too),
the actor's logits after the step within 1e-3 absolute (A). One line per
group, the worst tensor named; exit 1 when any fails. Standard library
only.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402

EXPERIENCE = ["logprobs", "ref_logprobs", "values", "reward_scores",
              "rewards", "advantages", "returns", "actor_loss", "critic_loss"]


def main(argv):
    atol = 1e-3
    if "--logits-after-atol" in argv:
        i = argv.index("--logits-after-atol")
        atol = float(argv[i + 1])
        del argv[i:i + 2]
    out, ref = st.read(argv[1]), st.read(argv[2])
    failed = 0

    def get(name):
        nonlocal failed
        if name not in out:
            print("missing %s FAIL" % name)
            failed += 1
            return None
        if out[name][1] != ref[name][1]:
            print("%s: shape %s, oracle %s FAIL" %
                  (name, out[name][1], ref[name][1]))
            failed += 1
            return None
        return st.values(out[name]), st.values(ref[name])

    worst, where = 0.0, ""
    for name in EXPERIENCE:
        pair = get(name)
        if pair is None:
            continue
        a, b = pair
        scale = max(abs(v) for v in b) or 1.0
        err = max(abs(x - y) for x, y in zip(a, b)) / scale
        if err >= worst:
            worst, where = err, name
    ok = worst <= 1e-4
    failed += not ok
    print("experience and losses: worst relative error %.1e (%s) %s" %
          (worst, where, "ok" if ok else "FAIL"))

    for side in ("actor_grad.", "critic_grad."):
        names = [n for n in ref if n.startswith(side)]
        norms = {n: math.sqrt(sum(v * v for v in st.values(ref[n])))
                 for n in names}
        top = max(norms.values())
        worst, where, zero = 0.0, "", 0
        for name in names:
            pair = get(name)
            if pair is None:
                continue
            a, b = pair
            diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
            if norms[name] < 1e-6 * top:
                zero += 1
                if diff > 1e-6 * top:
                    print("%s: zero in exact arithmetic, ours %.1e FAIL" %
                          (name, diff))
                    failed += 1
                continue
            err = diff / norms[name]
            if err >= worst:
                worst, where = err, name
        ok = worst <= 1e-3
        failed += not ok
        print("%s %d gradients: worst relative L2 %.1e (%s)%s %s" %
              (side[:-1], len(names), worst, where,
               ", %d zero" % zero if zero else "", "ok" if ok else "FAIL"))

    pair = get("actor_logits_after")
    if pair is not None:
        a, b = pair
        err = max(abs(x - y) for x, y in zip(a, b))
        ok = err <= atol
        failed += not ok
        print("actor_logits_after: largest difference %.1e %s" %
              (err, "ok" if ok else "FAIL"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
