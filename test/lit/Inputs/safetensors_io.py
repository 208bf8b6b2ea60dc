"""Reads and writes safetensors files with the standard library only (the
tests run where numpy may be absent). A tensor is [dtype, shape, raw bytes];
values() and pack() convert the raw bytes of F32, F64, I32 and I64 tensors;
values() reads BF16 (the gradients of a bf16 bundle) as well."""
import json
import struct

_FORMATS = {"F32": "f", "I64": "q", "I32": "i", "F64": "d"}


def read(path):
    """{name: [dtype, shape, raw]} of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        tensors[name] = [info["dtype"], info["shape"], body[b:e]]
    return tensors


def write(path, tensors):
    """Writes {name: [dtype, shape, raw]}."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def values(tensor):
    """The flat list of a tensor's values."""
    dtype, _, raw = tensor
    if dtype == "BF16":  # the high half of an f32
        halves = struct.unpack("<%dH" % (len(raw) // 2), raw)
        return list(struct.unpack("<%df" % len(halves),
                                  struct.pack("<%dI" % len(halves),
                                              *(h << 16 for h in halves))))
    size = struct.calcsize(_FORMATS[dtype])
    return list(struct.unpack("<%d%s" % (len(raw) // size, _FORMATS[dtype]),
                              raw))


def pack(dtype, shape, flat):
    """A tensor of `shape` holding the flat list `flat`."""
    return [dtype, list(shape),
            struct.pack("<%d%s" % (len(flat), _FORMATS[dtype]), *flat)]


def rows(tensor):
    """A 2-D tensor's values as a list of rows."""
    _, shape, _ = tensor
    flat = values(tensor)
    return [flat[r * shape[1]:(r + 1) * shape[1]] for r in range(shape[0])]
