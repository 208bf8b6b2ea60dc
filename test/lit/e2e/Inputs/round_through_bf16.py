#!/usr/bin/env python3
"""Rewrites an f32 hg module (hybridc --compile-to=import) so that chosen op
results are rounded through bf16 (a cast to bf16 and back) and nothing else
is: the f32 graph with exactly those roundings of a bf16 graph. It measures
how much one bf16 rounding moves the logits. Standard library only.

usage: round_through_bf16.py IN.mlir OUT.mlir OP#K [OP#K ...]

OP#K names the K-th (from 0) result of hg.OP in the module, e.g.
layer_norm#0 is the first layer norm's output. Each must exist.
"""
import re
import sys

RESULT = re.compile(r"^(\s*)(%\d+) = hg\.(\w+) .* -> (tensor<[^>]*xf32>)$")
VALUE = re.compile(r"%\d+\b")


def main():
    src, dst, wanted = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    seen, renamed, out = {}, {}, []
    for line in open(src).read().split("\n"):
        line = VALUE.sub(lambda m: renamed.get(m.group(0), m.group(0)), line)
        match = RESULT.match(line)
        if not match:
            out.append(line)
            continue
        indent, name, op, f32 = match.groups()
        key = f"{op}#{seen.get(op, 0)}"
        seen[op] = seen.get(op, 0) + 1
        if key not in wanted:
            out.append(line)
            continue
        wanted.discard(key)
        bf16 = f32.replace("xf32>", "xbf16>")
        number = name[1:]
        out.append(line.replace(f"{name} =", f"%exact{number} =", 1))
        out.append(f"{indent}%bf16_{number} = hg.cast %exact{number} : "
                   f"{f32} -> {bf16}")
        out.append(f"{indent}%rounded{number} = hg.cast %bf16_{number} : "
                   f"{bf16} -> {f32}")
        renamed[name] = f"%rounded{number}"
    if wanted:
        sys.exit(f"round_through_bf16.py: no f32 result {sorted(wanted)}")
    with open(dst, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
