#!/usr/bin/env python3
"""Turns text RLHF data into the token-id JSONL hybrid-rlhf reads, with an HF
`tokenizers` tokenizer (pip install tokenizers; no torch, no transformers).

  tokenize_jsonl.py --tokenizer TOKENIZER IN.jsonl OUT.jsonl
                    [--eos TOKEN | --no-eos]

IN holds one JSON object a line with text fields "prompt", "chosen" and
"rejected" (any of them; others are dropped), as DeepSpeed-Chat's datasets
give them ("Human: ... Assistant:" then the answer). OUT gets the same
fields as arrays of token ids. TOKENIZER is a tokenizer.json or a folder
holding one (an HF model folder). Answers ("chosen", "rejected") end with
the EOS token, as DeepSpeed-Chat's end_of_conversation_token ends them:
--eos names it (default: the folder's config.json eos_token_id, else
"<|endoftext|>" when the vocabulary has it); --no-eos leaves it off.
Prints one line: records, tokens, the longest sequence.
"""
import argparse
import json
import os
import sys

FIELDS = ("prompt", "chosen", "rejected")


def fail(message):
    sys.exit("tokenize_jsonl.py: error: " + message)


def load_tokenizer(path):
    try:
        from tokenizers import Tokenizer
    except ImportError:
        fail("the 'tokenizers' package is missing (pip install tokenizers)")
    file = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        fail("no tokenizer.json at %s" % path)
    return Tokenizer.from_file(file)


def eos_id(tokenizer, args):
    if args.no_eos:
        return None
    if args.eos is not None:
        i = tokenizer.token_to_id(args.eos)
        if i is None:
            fail("--eos %r is not in the tokenizer's vocabulary" % args.eos)
        return i
    config = os.path.join(args.tokenizer, "config.json")
    if os.path.isdir(args.tokenizer) and os.path.isfile(config):
        with open(config) as f:
            eos = json.load(f).get("eos_token_id")
        if isinstance(eos, list):
            eos = eos[0] if eos else None
        if isinstance(eos, int):
            return eos
    return tokenizer.token_to_id("<|endoftext|>")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--eos")
    ap.add_argument("--no-eos", action="store_true")
    ap.add_argument("input")
    ap.add_argument("output")
    args = ap.parse_args()
    if args.eos is not None and args.no_eos:
        fail("--eos and --no-eos exclude each other")
    tokenizer = load_tokenizer(args.tokenizer)
    eos = eos_id(tokenizer, args)
    records = tokens = longest = 0
    try:
        src = open(args.input)
    except OSError as e:
        fail("%s: %s" % (args.input, e.strerror))
    with src, open(args.output, "w") as out:
        for number, line in enumerate(src, 1):
            if not line.strip():
                continue
            try:
                text = json.loads(line)
            except json.JSONDecodeError:
                fail("%s:%d: not JSON" % (args.input, number))
            if not isinstance(text, dict) or not any(k in text for k in FIELDS):
                fail("%s:%d: no \"prompt\", \"chosen\" or \"rejected\"" % (args.input, number))
            ids = {}
            for field in FIELDS:
                if field not in text:
                    continue
                if not isinstance(text[field], str):
                    fail("%s:%d: \"%s\" is not text" % (args.input, number, field))
                ids[field] = tokenizer.encode(text[field], add_special_tokens=False).ids
                if field != "prompt" and eos is not None:
                    ids[field].append(eos)
                tokens += len(ids[field])
            longest = max(longest, len(ids.get("prompt", [])) +
                          max(len(ids.get("chosen", [])), len(ids.get("rejected", []))))
            out.write(json.dumps(ids) + "\n")
            records += 1
    if not records:
        fail("%s holds no records" % args.input)
    print("tokenize_jsonl.py: %d records, %d tokens, longest sequence %d -> %s"
          % (records, tokens, longest, args.output))


if __name__ == "__main__":
    main()
