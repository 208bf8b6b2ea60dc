#!/usr/bin/env python3
"""Checks hg-autodiff's gradients against central finite differences of the
loss, both run by hybrid-run on the CPU backend.

  finite_difference.py init WEIGHTS INPUTS [--model M]  (deterministic data)
  finite_difference.py check BUNDLE WEIGHTS INPUTS SCRATCH [--eps E]
                             [--max-rel R] [--model M]

`init` writes the parameters of Inputs/autodiff/M.mlir (model, the
default, rotary, attention, alibi, surrogate, rlhf or ranking) and its input
x ([5, 4] / [3, 4] / [5, 4] / [5, 4] / [5, 4] / [6, 4] / [20, 4])
with values spread
over [-1.5, 1.5] (pseudo-random, fixed seed).
  finite_difference.py directional BUNDLE WEIGHTS INPUTS SCRATCH
                             --params P1,P2,... [--eps E] [--max-rel R]

`directional` is for a whole model compiled with --train (too many
elements to move one at a time): per named parameter, `hybrid-run
train-step`'s gradient g (taken before its update) along d = g / max|g| +
pseudo-random noise in [-0.5, 0.5] against (loss(w + E d) - loss(w - E d)) / 2E of
@forward_loss, relative error |g.d - fd| / |fd| at most R.
`check` runs the bundle's forward_grad once, then forward twice per
parameter element with that element moved by +-E, and compares each
gradient tensor with (loss(+E) - loss(-E)) / 2E by relative L2 error
(|g - fd| / |fd|), which must be at most R. The losses are f32 (the CPU
backend's precision): with E = 1e-2 the difference quotient is good to
~1e-4 relative on this smooth loss, so R = 2e-3 leaves room and still
catches any wrong rule (a wrong term is an O(1) error).
Standard library only.
"""
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
import safetensors_io as st  # noqa: E402

# Per model: its parameters and the shape of its input x.
MODELS = {
    "model": ({"l1.weight": [6, 4], "l1.bias": [6], "l2.weight": [6, 3],
               "scale": [3], "mix": [3, 3]}, [5, 4]),
    "rotary": ({"w": [8, 4], "v": [8, 4]}, [3, 4]),
    "attention": ({"wq": [8, 4], "wk": [4, 4], "wv": [4, 4]}, [5, 4]),
    "alibi": ({"wq": [8, 4], "wk": [4, 4], "wv": [4, 4]}, [5, 4]),
    "surrogate": ({"w": [7, 4]}, [5, 4]),
    "rlhf": ({"w": [7, 4]}, [6, 4]),
    "ranking": ({"w": [3, 4]}, [20, 4]),
}


def lcg(seed):
    state = seed
    while True:
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        yield (state >> 11) / float(2**53)


def init(weights, inputs, model):
    params, x = MODELS[model]
    r = lcg(12345)
    tensors = {}
    for name, shape in params.items():
        n = math.prod(shape)
        tensors[name] = st.pack("F32", shape, [next(r) * 1.6 - 0.8
                                               for _ in range(n)])
    st.write(weights, tensors)
    st.write(inputs, {"x": st.pack("F32", x, [next(r) * 3 - 1.5
                                              for _ in range(math.prod(x))])})
    return 0


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(args), p.stderr.strip()))


def check(bundle, weights, inputs, scratch, eps, max_rel, model):
    hybrid_run = os.environ.get("HYBRID_RUN", "hybrid-run")
    grad_out = scratch + ".grad.safetensors"
    run([hybrid_run, "forward", bundle, "--executable", "forward_grad",
         "--weights", weights, "--inputs", inputs, "--out", grad_out])
    grads = st.read(grad_out)
    params = st.read(weights)
    moved, out = scratch + ".w.safetensors", scratch + ".loss.safetensors"

    def loss_with(name, k, delta):
        flat = st.values(params[name])
        flat[k] += delta
        changed = dict(params)
        changed[name] = st.pack("F32", params[name][1], flat)
        st.write(moved, changed)
        run([hybrid_run, "forward", bundle, "--weights", moved,
             "--inputs", inputs, "--out", out, "--threads", "1"])
        return st.values(st.read(out)["loss"])[0]

    failed = 0
    for name in MODELS[model][0]:
        g = st.values(grads["grad." + name])
        fd = [(loss_with(name, k, eps) - loss_with(name, k, -eps)) / (2 * eps)
              for k in range(len(g))]
        err = math.sqrt(sum((a - b) ** 2 for a, b in zip(g, fd)))
        norm = math.sqrt(sum(b * b for b in fd))
        rel = err / norm if norm > 0 else err
        ok = rel <= max_rel
        failed += not ok
        print("grad.%s: relative L2 error %.1e vs finite differences "
              "(|fd| %.3g) %s" % (name, rel, norm, "ok" if ok else "FAIL"))
    return 1 if failed else 0


def directional(bundle, weights, inputs, scratch, eps, max_rel, names):
    hybrid_run = os.environ.get("HYBRID_RUN", "hybrid-run")
    step_out = scratch + ".step.safetensors"
    run([hybrid_run, "train-step", bundle, "--weights", weights, "--inputs",
         inputs, "--out", step_out])
    grads = st.read(step_out)
    params = st.read(weights)
    moved, out = scratch + ".w.safetensors", scratch + ".loss.safetensors"

    def loss_with(name, direction, scale):
        flat = [w + scale * d for w, d in
                zip(st.values(params[name]), direction)]
        changed = dict(params)
        changed[name] = st.pack("F32", params[name][1], flat)
        st.write(moved, changed)
        run([hybrid_run, "forward", bundle, "--executable", "forward_loss",
             "--weights", moved, "--inputs", inputs, "--out", out,
             "--threads", "1"])
        return st.values(st.read(out)["loss"])[0]

    failed = 0
    r = lcg(2024)
    for name in names:
        g = st.values(grads["grad." + name])
        # Mostly along g (a large directional derivative, whatever the
        # f32 loss's roundoff), plus noise in [-0.5, 0.5]: a gradient that
        # is wrong in any direction misses.
        top = max(abs(x) for x in g) or 1.0
        d = [x / top + next(r) - 0.5 for x in g]
        fd = (loss_with(name, d, eps) - loss_with(name, d, -eps)) / (2 * eps)
        analytic = sum(a * b for a, b in zip(g, d))
        rel = abs(analytic - fd) / abs(fd) if fd != 0 else abs(analytic)
        ok = rel <= max_rel
        failed += not ok
        print("grad.%s . d: %.6g vs finite differences %.6g, relative error "
              "%.1e %s" % (name, analytic, fd, rel, "ok" if ok else "FAIL"))
    return 1 if failed else 0


def main(argv):
    args = argv[1:]
    opts = {"--eps": 1e-2, "--max-rel": 2e-3, "--model": "model",
            "--params": ""}
    for flag in list(opts):
        if flag in args:
            i = args.index(flag)
            opts[flag] = (args[i + 1] if flag in ("--model", "--params")
                          else float(args[i + 1]))
            del args[i:i + 2]
    if opts["--model"] not in MODELS:
        sys.exit("unknown model %r" % opts["--model"])
    if args[0] == "init":
        return init(*args[1:], opts["--model"])
    if args[0] == "directional":
        return directional(*args[1:], opts["--eps"], opts["--max-rel"],
                           opts["--params"].split(","))
    if args[0] == "check":
        return check(*args[1:], opts["--eps"], opts["--max-rel"],
                     opts["--model"])
    sys.exit("unknown command %r" % args[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
