#!/usr/bin/env python3
"""Writes an edited copy of a safetensors file, for error-path tests.

usage: edit_safetensors.py IN OUT [--drop NAME] [--add NAME] [--reshape NAME]
                                  [--to-f32 NAME] [--keep NAME]
Only the standard library: the tests run where numpy may be absent.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Inputs"))
from safetensors_io import read, write  # noqa: E402


def main(argv):
    src, dst, ops = argv[1], argv[2], argv[3:]
    tensors = read(src)
    for op, name in zip(ops[::2], ops[1::2]):
        if op == "--drop":
            del tensors[name]
        elif op == "--keep":
            tensors = {name: tensors[name]}
        elif op == "--add":
            tensors[name] = ["F32", [2], struct.pack("<2f", 1.0, 2.0)]
        elif op == "--reshape":
            dtype, shape, raw = tensors[name]
            tensors[name] = [dtype, [shape[0] * shape[1]] + shape[2:] if len(shape) > 1 else [1] + shape, raw]
        elif op == "--to-f32":
            dtype, shape, raw = tensors[name]
            assert dtype == "I64"
            vals = struct.unpack("<%dq" % (len(raw) // 8), raw)
            tensors[name] = ["F32", shape, struct.pack("<%df" % len(vals), *vals)]
        else:
            sys.exit("unknown edit " + op)
    write(dst, tensors)


if __name__ == "__main__":
    main(sys.argv)
