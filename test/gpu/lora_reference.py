#!/usr/bin/env python3
"""The LoRA oracle: a fixture with PEFT adapters, one causal-LM step in
PyTorch (float32, CPU), written for lora-step.test.

  lora_reference.py FIXTURE ADAPTERS OUT.safetensors

FIXTURE is an HF folder (config.json, model.safetensors, ref.safetensors),
ADAPTERS a PEFT folder (adapter_config.json, adapter_model.safetensors;
make_lora_adapters.py writes one). The model is transformers'
AutoModelForCausalLM wrapped by peft.PeftModel.from_pretrained when peft
imports, else by the same maths written out (PEFT's LoRA layer, lora_dropout
0: base(x) + lora_B(lora_A(x)) * lora_alpha / r, a Conv1D's weight [in, out]
as fan_in_fan_out). On ref.safetensors' input_ids with labels = input_ids:
OUT gets `loss` [1], `logits`, and `grad.<PEFT name>` of every lora_A /
lora_B tensor (the names adapter_model.safetensors uses), plus metadata
`oracle` = "peft X.Y" or "manual". Needs torch, transformers and
safetensors (and peft, carried as a wheel); run where they are (the GPU
host), for each fixture with adapters from
test/lit/e2e/Inputs/make_lora_adapters.py (--r 4 --alpha 8 --seed 1, the
targets of e2e/lora.test), and compare hybrid-run train-step's grad.* with
check_grads.py --grads-only. Not run yet: no device time was left when it
was written (see README, LoRA).
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM


def manual_lora(model, adapters, config):
    """PEFT's LoRA maths on the targeted modules, with the file's tensors."""
    scaling = config["lora_alpha"] / config["r"]
    params = {}
    prefix = "base_model.model."
    modules = {n[len(prefix):-len(".lora_A.weight")]
               for n in adapters if n.endswith(".lora_A.weight")}
    for name, module in model.named_modules():
        if name not in modules:
            continue
        a = torch.nn.Parameter(adapters[prefix + name + ".lora_A.weight"])
        b = torch.nn.Parameter(adapters[prefix + name + ".lora_B.weight"])
        params[prefix + name + ".lora_A.weight"] = a
        params[prefix + name + ".lora_B.weight"] = b
        base_forward = module.forward

        def forward(x, base_forward=base_forward, a=a, b=b):
            return base_forward(x) + (x @ a.t()) @ b.t() * scaling

        module.forward = forward
    if len(params) != len(adapters):
        sys.exit("adapters name modules the model lacks")
    return params, "manual"


def peft_lora(model, folder):
    import peft
    wrapped = peft.PeftModel.from_pretrained(model, folder, is_trainable=True)
    params = {}
    for name, p in wrapped.named_parameters():
        if "lora_" in name:
            # get_peft_model_state_dict's names: no adapter name.
            params[name.replace(".default.weight", ".weight")] = p
    return wrapped, params, "peft " + peft.__version__


def main(argv):
    fixture, folder, out = argv[1:]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(fixture,
                                                 dtype=torch.float32)
    model.train()  # the fixtures' dropouts are 0
    config = json.load(open(os.path.join(folder, "adapter_config.json")))
    adapters = load_file(os.path.join(folder, "adapter_model.safetensors"))
    try:
        model, params, oracle = peft_lora(model, folder)
        # from_pretrained's tensors are the file's.
        for name, p in params.items():
            assert torch.equal(p.detach(), adapters[name]), name
    except ImportError:
        params, oracle = manual_lora(model, adapters, config)
    for name, p in model.named_parameters():
        if name.replace(".default.weight", ".weight") not in params:
            p.requires_grad_(False)
    ids = load_file(os.path.join(fixture, "ref.safetensors"))["input_ids"]
    result = model(input_ids=ids, labels=ids)
    result.loss.backward()
    tensors = {"loss": result.loss.detach().reshape(1),
               "logits": result.logits.detach().contiguous()}
    for name, p in sorted(params.items()):
        tensors["grad." + name] = p.grad.detach().contiguous()
    save_file(tensors, out, metadata={"oracle": oracle})
    print("%s: %s, loss %.6f, %d adapter gradients"
          % (out, oracle, result.loss.item(), len(params)))


if __name__ == "__main__":
    main(sys.argv)
