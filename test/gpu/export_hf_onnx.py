#!/usr/bin/env python3
"""Exports tiny HF models of every family hybridc takes to ONNX, with
HuggingFace reference logits, for the frontend's "any exported decoder"
check. Run where torch + transformers + onnx are (the GPU host):

    python3 test/gpu/export_hf_onnx.py CONFIG_ROOT OUT_DIR [OPSET ...]

CONFIG_ROOT holds <family>/config.json (test/lit/hf/Inputs). For each family
and opset, OUT_DIR/<family>-op<N>/ gets config.json, model.safetensors,
model.onnx (torch.onnx.export, dynamo, dims 'batch' and 'seq') and
ref.safetensors (input_ids [2,16], logits from HF's eager attention).
"""
import json
import os
import shutil
import sys
import traceback

import torch
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM


class LogitsOnly(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, input_ids):
        return self.m(input_ids=input_ids, use_cache=False).logits


def export(family_dir, out, opset):
    config = AutoConfig.from_pretrained(family_dir)
    config._attn_implementation = "eager"
    # Some families default pad_token_id to an id past a tiny vocabulary.
    if getattr(config, "pad_token_id", None) is not None and \
            config.pad_token_id >= config.vocab_size:
        config.pad_token_id = None
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.3)
            else:
                p.normal_(1.0 if p.abs().sum() > 0 else 0.0, 0.1)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    ids = torch.randint(0, config.vocab_size, (2, 16))
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits.float()
    save_file({"input_ids": ids.contiguous(), "logits": logits.contiguous()},
              os.path.join(out, "ref.safetensors"))
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("seq", min=2, max=48)
    program = torch.onnx.export(
        LogitsOnly(model), (ids,), dynamo=True, opset_version=opset,
        input_names=["input_ids"], output_names=["logits"],
        dynamic_shapes={"input_ids": {0: batch, 1: seq}})
    program.save(os.path.join(out, "model.onnx"))


def main():
    root, out = sys.argv[1], sys.argv[2]
    opsets = [int(o) for o in sys.argv[3:]] or [18]
    status = {}
    for family in sorted(os.listdir(root)):
        cfg = os.path.join(root, family, "config.json")
        if not os.path.exists(cfg):
            continue
        for opset in opsets:
            name = f"{family}-op{opset}"
            try:
                export(os.path.join(root, family), os.path.join(out, name), opset)
                status[name] = "ok"
            except Exception as e:  # keep going: report what failed
                status[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                traceback.print_exc()
                shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    with open(os.path.join(out, "status.json"), "w") as f:
        json.dump(status, f, indent=1)
    print(json.dumps(status, indent=1))


if __name__ == "__main__":
    main()
