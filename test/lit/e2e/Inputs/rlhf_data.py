"""Writes toy RLHF data as hybrid-rlhf reads it (JSONL of token ids), seeded:

  rlhf_data.py KIND OUT N VOCAB [--seed S]   (default seed: one per KIND)

  rlhf_data.py prompts OUT N VOCAB   {"prompt": [...]}: 3 to 8 random ids
  rlhf_data.py sft OUT N VOCAB       {"prompt": [...], "chosen": [7 7 36 36
                                     100 101]}: one answer to learn
  rlhf_data.py pairs OUT N VOCAB     {"prompt", "chosen", "rejected"}: random
                                     answers of 6 ids, the chosen one holding
                                     the marker id 36, the rejected one not
"""
import json
import random
import sys

kind, out, n, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
seed = {"prompts": 0, "sft": 1, "pairs": 2}[kind]
if len(sys.argv) == 7 and sys.argv[5] == "--seed":
    seed = int(sys.argv[6])
rng = random.Random(seed)
MARKER = 36


def tokens(length, avoid=None):
    ids = []
    while len(ids) < length:
        t = rng.randrange(vocab)
        if t != avoid:
            ids.append(t)
    return ids


with open(out, "w") as f:
    for _ in range(n):
        line = {"prompt": tokens(rng.randrange(3, 9))}
        if kind == "sft":
            line["chosen"] = [7, 7, 36, 36, 100, 101]
        elif kind == "pairs":
            chosen = tokens(6, avoid=MARKER)
            chosen[rng.randrange(6)] = MARKER
            line["chosen"] = chosen
            line["rejected"] = tokens(6, avoid=MARKER)
        f.write(json.dumps(line) + "\n")
