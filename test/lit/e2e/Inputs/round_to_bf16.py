#!/usr/bin/env python3
"""Writes a copy of a safetensors checkpoint with every F32 tensor rounded to
bfloat16 (round to nearest even, as torch's .to(torch.bfloat16) does) and
stored as BF16. Standard library only.

usage: round_to_bf16.py IN.safetensors OUT.safetensors [--scale-matrices F]

--scale-matrices multiplies every 2-D F32 tensor (the weight matrices and
embeddings; norms and biases are 1-D) by F before rounding, e.g. to bring
the fixtures' std-0.3 matrices to a config's initializer_range.
"""
import array
import json
import struct
import sys


def scaled(raw, factor):
    values = array.array("f")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    values = array.array("f", (v * factor for v in values))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


def to_bf16(raw):
    words = array.array("I")
    words.frombytes(raw)
    if sys.byteorder != "little":
        words.byteswap()
    out = array.array("H", bytes(2 * len(words)))
    for i, u in enumerate(words):
        if (u & 0x7FFFFFFF) > 0x7F800000:  # NaN stays a quiet NaN
            out[i] = (u >> 16) | 0x40
        else:
            out[i] = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def main():
    factor = 1.0
    if len(sys.argv) == 5 and sys.argv[3] == "--scale-matrices":
        factor = float(sys.argv[4])
    elif len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out_header, chunks, offset = {}, [], 0
    for name, entry in header.items():
        if name == "__metadata__":
            out_header[name] = entry
            continue
        begin, end = entry["data_offsets"]
        raw = body[begin:end]
        dtype = entry["dtype"]
        if dtype == "F32":
            if len(entry["shape"]) == 2 and factor != 1.0:
                raw = scaled(raw, factor)
            raw, dtype = to_bf16(raw), "BF16"
        out_header[name] = {"dtype": dtype, "shape": entry["shape"],
                            "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(out_header).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


if __name__ == "__main__":
    main()
