#!/usr/bin/env python3
"""How far HuggingFace's own bfloat16 forward is from its float32 forward on
the shared fixtures, with the weights rounded to bf16 for both: the error
bf16 arithmetic itself brings, which bounds what hybridc's bf16 graphs can
be held to. Run where torch + transformers are (the GPU host):

    python3 test/gpu/hf_bf16_error.py FIXTURES_DIR [OUT_DIR]

Prints, per fixture and device (cpu, cuda), max |logits_bf16 - logits_f32|
relative to max |logits_f32|. With OUT_DIR, writes OUT_DIR/<m>-hf-bf16.safetensors
(the bf16 logits as float32) to compare hybridc's bf16 logits against.
"""
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM


def main():
    root = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else None
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for m in ["gpt2", "opt", "llama"]:
        ids = load_file(os.path.join(root, m, "ref.safetensors"))["input_ids"]
        model = AutoModelForCausalLM.from_pretrained(
            os.path.join(root, m), torch_dtype=torch.float32,
            attn_implementation="eager")
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(torch.bfloat16).to(torch.float32))
        for device in devices:
            f32 = model.to(device, torch.float32)
            with torch.no_grad():
                ref = f32(input_ids=ids.to(device)).logits.float().cpu()
            b16 = model.to(device, torch.bfloat16)
            with torch.no_grad():
                got = b16(input_ids=ids.to(device)).logits.float().cpu()
            rel = (got - ref).abs().max().item() / ref.abs().max().item()
            print(f"{m:6s} {device:5s} hf bf16 vs f32: max |d| / max |ref| = "
                  f"{rel:.4f}")
            if out and device == "cpu":
                os.makedirs(out, exist_ok=True)
                save_file({"logits": got.contiguous()},
                          os.path.join(out, f"{m}-hf-bf16.safetensors"))
            model = model.to("cpu", torch.float32)


if __name__ == "__main__":
    main()
