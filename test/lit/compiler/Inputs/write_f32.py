#!/usr/bin/env python3
"""Writes float32 tensors to a safetensors file, for small runtime checks.

usage: write_f32.py OUT NAME=2x3:0,1,2,3,4,5 [NAME=DIMS:VALUES ...]
Only the standard library: the tests run where numpy may be absent.
"""
import json
import struct
import sys


def main(argv):
    header, blobs, offset = {}, [], 0
    for spec in argv[2:]:
        name, rest = spec.split("=", 1)
        dims, values = rest.split(":", 1)
        shape = [int(d) for d in dims.split("x")]
        floats = [float(v) for v in values.split(",")] if values else []
        raw = struct.pack("<%df" % len(floats), *floats)
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(argv[1], "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    main(sys.argv)
