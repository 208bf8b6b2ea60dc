"""Builds a small word-level HF tokenizer (tokenizers' WordLevel, whitespace
split) over TEXT's words plus <|endoftext|> and [UNK], and saves it as
OUT/tokenizer.json: a tokenizer for tests, made without a download.

  make_tokenizer.py TEXT OUT
"""
import os
import sys

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

text, out = sys.argv[1], sys.argv[2]
tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer.train([text], trainers.WordLevelTrainer(
    special_tokens=["[UNK]", "<|endoftext|>"]))
os.makedirs(out, exist_ok=True)
tokenizer.save(os.path.join(out, "tokenizer.json"))
