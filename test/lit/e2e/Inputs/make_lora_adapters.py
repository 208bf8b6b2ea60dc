#!/usr/bin/env python3
"""Writes a PEFT LoRA adapter folder for a fixture, with seeded random A and
B (both nonzero, so a step's gradients reach both):

  make_lora_adapters.py FIXTURE OUT_DIR --r R --alpha A --targets T,T
                        [--seed S] [--b-scale X]

FIXTURE is a folder with model.safetensors; a module is targeted as PEFT's
target_modules list does it (its path is T or ends in ".T"). A linear's
weight is [out, in] (nn.Linear), or [in, out] for GPT-2's Conv1D
(fan_in_fan_out, named c_attn / c_proj / c_fc): lora_A.weight is [r, in]
uniform in +-1/sqrt(in) (PEFT's kaiming_uniform_ bound), lora_B.weight
[out, r] uniform in +-X (default 0.3). Names are PEFT's:
base_model.model.<module>.lora_A.weight. Standard library only.
"""
import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402

CONV1D = ("c_attn", "c_proj", "c_fc")


def main(argv):
    args = argv[1:]
    opts = {"--r": "4", "--alpha": "8", "--targets": "", "--seed": "0",
            "--b-scale": "0.3"}
    for flag in list(opts):
        if flag in args:
            i = args.index(flag)
            opts[flag] = args[i + 1]
            del args[i:i + 2]
    fixture, out = args
    r, alpha = int(opts["--r"]), float(opts["--alpha"])
    targets = [t for t in opts["--targets"].split(",") if t]
    rng = random.Random(int(opts["--seed"]))
    model = st.read(os.path.join(fixture, "model.safetensors"))
    conv1d = json.load(open(os.path.join(fixture, "config.json")))[
        "model_type"] == "gpt2"
    tensors = {}
    for name in sorted(model):
        if not name.endswith(".weight") or len(model[name][1]) != 2:
            continue
        module = name[:-len(".weight")]
        if not any(module == t or module.endswith("." + t) for t in targets):
            continue
        rows, cols = model[name][1]
        fan_in_fan_out = conv1d and module.split(".")[-1] in CONV1D
        n_in, n_out = (rows, cols) if fan_in_fan_out else (cols, rows)
        bound = 1.0 / n_in ** 0.5
        b_scale = float(opts["--b-scale"])
        a = [rng.uniform(-bound, bound) for _ in range(r * n_in)]
        b = [rng.uniform(-b_scale, b_scale) for _ in range(n_out * r)]
        prefix = "base_model.model." + module
        tensors[prefix + ".lora_A.weight"] = st.pack("F32", [r, n_in], a)
        tensors[prefix + ".lora_B.weight"] = st.pack("F32", [n_out, r], b)
    if not tensors:
        sys.exit("no module matches " + ",".join(targets))
    os.makedirs(out, exist_ok=True)
    st.write(os.path.join(out, "adapter_model.safetensors"), tensors)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r,
              "lora_alpha": alpha, "target_modules": targets,
              "lora_dropout": 0.0, "fan_in_fan_out": conv1d, "bias": "none",
              "base_model_name_or_path": fixture}
    with open(os.path.join(out, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print("%d adapters" % (len(tensors) // 2))


if __name__ == "__main__":
    main(sys.argv)
