#!/usr/bin/env python3
"""Checks of hybrid-run generate's output (tokens, logprobs, lengths).

  generation.py tokens GEN REF NAME
      GEN's tokens equal REF's int64 tensor NAME exactly.
  generation.py sequence PROMPTS NAME GEN OUT
      Writes OUT: input_ids = the prompt (PROMPTS' tensor NAME) followed by
      GEN's tokens, and attention_mask (PROMPTS' mask, or ones, then ones).
  generation.py logprobs GEN LOGITS PROMPT_LEN [--atol X]
      Recomputes every generated token's log-probability in float64 from
      the full-sequence logits [B, P+N, V] of `hybrid-run forward` (row b,
      step i: log_softmax(logits[b, P-1+i])[token]) and compares GEN's.
  generation.py padded-batch PROMPTS NAME DIR
      Writes DIR/batch.safetensors (three prompts of 8, 5 and 3 tokens cut
      from PROMPTS' NAME, left-padded to 8 with a nonzero pad id, with
      attention_mask) and DIR/row{0,1,2}.safetensors (each prompt alone,
      unpadded).
  generation.py same-rows BATCH ROW0 ROW1 ... [--atol X]
      Row r of BATCH has exactly ROWr's tokens and lengths, and log-probs
      within X (default 0: the same float32 bits).
  generation.py decode-cost SHORT LONG --max-ratio R
      SHORT and LONG hold hybrid-run generate's report; the decode time per
      token of LONG is at most R times SHORT's.
Only the standard library: the tests run where numpy may be absent.
"""
import math
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402


def option(args, name, default):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return float(value)
    return default


def tokens(gen, ref, name):
    got = st.read(gen)["tokens"]
    want = st.read(ref)[name]
    if got[1] != want[1] or got[2] != want[2]:
        print("tokens differ from %s:" % name)
        print("  got  %s" % st.rows(got))
        print("  want %s" % st.rows(want))
        return 1
    print("tokens equal %s: %dx%d" % (name, want[1][0], want[1][1]))
    return 0


def sequence(prompts, name, gen, out):
    src = st.read(prompts)
    prompt = st.rows(src[name])
    new = st.rows(st.read(gen)["tokens"])
    mask = (st.rows(src["attention_mask"]) if "attention_mask" in src
            else [[1] * len(p) for p in prompt])
    ids = [p + n for p, n in zip(prompt, new)]
    full = [m + [1] * len(n) for m, n in zip(mask, new)]
    shape = [len(ids), len(ids[0])]
    st.write(out, {
        "input_ids": st.pack("I64", shape, [v for r in ids for v in r]),
        "attention_mask": st.pack("I64", shape, [v for r in full for v in r]),
    })
    return 0


def logprobs(gen, logits_path, prompt_len, atol):
    g = st.read(gen)
    toks, lps = st.rows(g["tokens"]), st.rows(g["logprobs"])
    lengths = st.values(g["lengths"])
    logits = st.read(logits_path)["logits"]
    batch, seq, vocab = logits[1]
    flat = st.values(logits)
    worst, count = 0.0, 0
    for b in range(batch):
        for i in range(lengths[b]):
            start = ((b * seq) + prompt_len - 1 + i) * vocab
            row = flat[start:start + vocab]
            top = max(row)
            lse = top + math.log(math.fsum(math.exp(x - top) for x in row))
            want = row[toks[b][i]] - lse
            worst = max(worst, abs(want - lps[b][i]))
            count += 1
    print("logprobs: max |diff| %.3g over %d tokens (atol %g)" %
          (worst, count, atol))
    return 0 if worst <= atol and count > 0 else 1


def padded_batch(prompts, name, out_dir):
    rows = st.rows(st.read(prompts)[name])
    width = len(rows[0])
    cut = [rows[0], rows[1][-5:], rows[0][:3]]
    pad = 13
    ids = [[pad] * (width - len(p)) + p for p in cut]
    mask = [[0] * (width - len(p)) + [1] * len(p) for p in cut]
    st.write(os.path.join(out_dir, "batch.safetensors"), {
        "input_ids": st.pack("I64", [3, width], sum(ids, [])),
        "attention_mask": st.pack("I64", [3, width], sum(mask, [])),
    })
    for r, p in enumerate(cut):
        st.write(os.path.join(out_dir, "row%d.safetensors" % r),
                 {"input_ids": st.pack("I64", [1, len(p)], p)})
    return 0


def same_rows(batch, alone, atol):
    b = st.read(batch)
    bt, bl = st.rows(b["tokens"]), st.rows(b["logprobs"])
    blen = st.values(b["lengths"])
    status, worst = 0, 0.0
    for r, path in enumerate(alone):
        a = st.read(path)
        at, al = st.rows(a["tokens"])[0], st.rows(a["logprobs"])[0]
        if bt[r] != at or blen[r] != st.values(a["lengths"])[0]:
            print("row %d: batch tokens %s, alone %s" % (r, bt[r], at))
            status = 1
        worst = max([worst] + [abs(x - y) for x, y in zip(bl[r], al)])
        if atol == 0 and any(struct.pack("<f", x) != struct.pack("<f", y)
                             for x, y in zip(bl[r], al)):
            print("row %d: log-probs differ in their bits" % r)
            status = 1
    print("rows: %d equal token sequences; logprobs max |diff| %.3g "
          "(atol %g)" % (len(alone), worst, atol))
    return status if worst <= atol else 1


def decode_cost(short, long_, max_ratio):
    def per_token(path):
        text = open(path).read()
        m = re.search(r"decode ([0-9.]+) ms/step", text)
        if not m:
            sys.exit("%s: no 'decode ... ms/step' in %r" % (path, text))
        return float(m.group(1))
    a, b = per_token(short), per_token(long_)
    ratio = b / a
    print("decode per token: %.3f ms short, %.3f ms long, ratio %.2f "
          "(at most %.2f)" % (a, b, ratio, max_ratio))
    return 0 if ratio <= max_ratio else 1


def main(argv):
    args = argv[1:]
    atol = option(args, "--atol", None)
    max_ratio = option(args, "--max-ratio", None)
    cmd, rest = args[0], args[1:]
    if cmd == "tokens":
        return tokens(*rest)
    if cmd == "sequence":
        return sequence(*rest)
    if cmd == "logprobs":
        return logprobs(rest[0], rest[1], int(rest[2]),
                        1e-4 if atol is None else atol)
    if cmd == "padded-batch":
        return padded_batch(*rest)
    if cmd == "same-rows":
        return same_rows(rest[0], rest[1:], 0.0 if atol is None else atol)
    if cmd == "decode-cost":
        return decode_cost(rest[0], rest[1], max_ratio)
    sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
