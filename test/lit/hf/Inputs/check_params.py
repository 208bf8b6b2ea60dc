#!/usr/bin/env python3
"""Checks that the parameters of an hg module (printed by `hybridc ... --emit=hg`)
are exactly the tensors of a safetensors checkpoint, with the same shapes.
Names listed in the module's hg.tied may be in the checkpoint without being
parameters. Prints one line per problem, or "params match: N tensors"."""
import json
import re
import struct
import sys


def checkpoint_shapes(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    return {name: entry["shape"] for name, entry in header.items()
            if name != "__metadata__"}


def module_params(text):
    params = {}
    for dims, name in re.findall(r'tensor<([0-9x]*)xf32> \{hg\.param = "([^"]+)"\}', text):
        params[name] = [int(d) for d in dims.split("x")] if dims else []
    tied = re.search(r'hg\.tied = \[([^\]]*)\]', text)
    return params, set(re.findall(r'"([^"]+)"', tied.group(1))) if tied else set()


def main():
    module_path, checkpoint_path = sys.argv[1], sys.argv[2]
    params, tied = module_params(open(module_path).read())
    tensors = checkpoint_shapes(checkpoint_path)
    problems = []
    for name, shape in sorted(params.items()):
        if name not in tensors:
            problems.append(f"parameter {name} is not in the checkpoint")
        elif tensors[name] != shape:
            problems.append(f"parameter {name}: module {shape}, checkpoint {tensors[name]}")
    for name in sorted(set(tensors) - set(params) - tied):
        problems.append(f"checkpoint tensor {name} is not a parameter")
    for problem in problems:
        print(problem)
    if not problems:
        print(f"params match: {len(params)} tensors")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
