#!/usr/bin/env python3
"""LoRA against the merged-weight model (no torch needed):

  lora_merged.py merge FIXTURE ADAPTERS OUT.safetensors
  lora_merged.py check LORA.safetensors MERGED.safetensors ADAPTERS
                       [--rel-l2 G] [--loss-rtol R] [--frozen]

With scale s = lora_alpha / r, a LoRA linear computes x (W + s B A)^T (PEFT;
a Conv1D weight [in, out] computes x (W + s A^T B^T)). `merge` writes the
fixture's weights with every adapter merged (W_eff), an ordinary checkpoint.
`check` takes a step's outputs on the LoRA bundle (LORA: loss, grad.<name>)
and on the base bundle bound to the merged weights (MERGED): the losses
agree within R (default 1e-5 relative), and with G = dL/dW_eff from MERGED,
each adapter's gradients are the chain rule's, dA = s B^T G and dB = s G A^T
(Conv1D: dA = s B^T G^T, dB = s G^T A^T), and each base parameter's is
MERGED's own (dL/dW = dL/dW_eff), all within G relative L2 (default 1e-3).
--frozen: LORA has gradients for the adapters only (--only-optimize-lora),
and that is checked too. Standard library only.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402

PREFIX = "base_model.model."


def adapters_of(folder):
    config = json.load(open(os.path.join(folder, "adapter_config.json")))
    tensors = st.read(os.path.join(folder, "adapter_model.safetensors"))
    scale = config["lora_alpha"] / config["r"]
    # PEFT's one flag for the model: its weights are [in, out] (Conv1D).
    transposed = bool(config.get("fan_in_fan_out", False))
    out = []
    for name in sorted(tensors):
        if name.endswith(".lora_A.weight"):
            module = name[len(PREFIX):-len(".lora_A.weight")]
            out.append((module, st.rows(tensors[name]),
                        st.rows(tensors[PREFIX + module + ".lora_B.weight"])))
    return scale, transposed, out


def matmul(a, b):
    bt = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in bt] for row in a]


def transpose(a):
    return [list(r) for r in zip(*a)]


def flat(m):
    return [v for r in m for v in r]


def rel_l2(ours, ref):
    num = math.sqrt(sum((a - b) ** 2 for a, b in zip(ours, ref)))
    den = math.sqrt(sum(b * b for b in ref))
    return num / den if den else num


def merge(fixture, folder, out):
    scale, transposed, adapters = adapters_of(folder)
    model = st.read(os.path.join(fixture, "model.safetensors"))
    for module, a, b in adapters:
        w = model[module + ".weight"]
        delta = matmul(b, a)  # [out, in]
        if transposed:
            delta = transpose(delta)  # a Conv1D weight [in, out]
        merged = [v + scale * d for v, d in zip(st.values(w), flat(delta))]
        model[module + ".weight"] = st.pack("F32", w[1], merged)
    st.write(out, model)
    print("merged %d adapters (scale %g)" % (len(adapters), scale))


def check(lora_path, merged_path, folder, opts):
    scale, transposed, adapters = adapters_of(folder)
    lora, merged = st.read(lora_path), st.read(merged_path)
    loss, ref = st.values(lora["loss"])[0], st.values(merged["loss"])[0]
    loss_err = abs(loss - ref) / abs(ref)
    print("loss %.7f vs merged %.7f: %.1e %s" % (
        loss, ref, loss_err, "ok" if loss_err <= opts["--loss-rtol"] else
        "FAIL"))
    worst, fails, count = 0.0, 0, 0
    adapter_grads = set()

    def compare(name, ours, expected):
        nonlocal worst, fails, count
        err = rel_l2(ours, expected)
        count += 1
        worst = max(worst, err)
        if err > opts["--rel-l2"]:
            fails += 1
            print("FAIL %s: relative L2 %.2e" % (name, err))

    for module, a, b in adapters:
        grad = merged["grad." + module + ".weight"]
        g = st.rows(grad)
        if transposed:
            g = transpose(g)  # Conv1D: G^T is [out, in]
        da = matmul(transpose(b), g)  # [r, in]
        db = matmul(g, transpose(a))  # [out, r]
        for which, expected in (("lora_A", da), ("lora_B", db)):
            name = "grad." + PREFIX + module + "." + which + ".weight"
            adapter_grads.add(name)
            compare(name, st.values(lora[name]),
                    [scale * v for v in flat(expected)])
    base = [n for n in lora if n.startswith("grad.") and
            n not in adapter_grads]
    for name in base:
        compare(name, st.values(lora[name]), st.values(merged[name]))
    if "--frozen" in opts:
        if base:
            fails += 1
            print("FAIL: frozen base parameters have gradients: %s"
                  % ", ".join(sorted(base)[:3]))
        print("only the %d adapter gradients" % len(adapter_grads))
    print("%d gradients (%d adapters), worst relative L2 error %.1e %s"
          % (count, len(adapter_grads), worst,
             "ok" if not fails and loss_err <= opts["--loss-rtol"]
             else "FAIL"))
    return 1 if fails or loss_err > opts["--loss-rtol"] else 0


def main(argv):
    args = argv[1:]
    opts = {"--rel-l2": 1e-3, "--loss-rtol": 1e-5}
    for flag in list(opts):
        if flag in args:
            i = args.index(flag)
            opts[flag] = float(args[i + 1])
            del args[i:i + 2]
    if "--frozen" in args:
        args.remove("--frozen")
        opts["--frozen"] = True
    if args[0] == "merge":
        merge(*args[1:])
        return 0
    return check(*args[1:], opts)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
