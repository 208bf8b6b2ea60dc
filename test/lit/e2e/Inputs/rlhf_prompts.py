"""Writes N prompts of random token ids (a JSONL line each, {"prompt": [...]})
for hybrid-rlhf step3: lengths from 3 to 8, ids below VOCAB, seed 0.

  rlhf_prompts.py OUT.jsonl N VOCAB
"""
import json
import random
import sys

out, n, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(0)
with open(out, "w") as f:
    for _ in range(n):
        length = rng.randrange(3, 9)
        f.write(json.dumps({"prompt": [rng.randrange(vocab) for _ in range(length)]}) + "\n")
