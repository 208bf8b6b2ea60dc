#!/usr/bin/env python3
"""Writes an ONNX model without torch.onnx's metadata_props.

  strip_torch_metadata.py IN.onnx OUT.onnx [--keep-nodes]
                          [--replace-fx OLD NEW]

Drops the metadata_props of the graph (field 16: the exported program's
graph signature), of every node (field 9: pkg.torch.onnx.fx_node, ...) and
of every value_info, input and output (field 4: folded_from, ...), working
on the protobuf wire format (standard library only). --keep-nodes keeps
everything but edits node metadata: each --replace-fx replaces the text OLD
by NEW in every node's metadata values (to contradict the signature).
"""
import sys


def varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def encode_varint(value):
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fields(data):
    """(number, wire type, raw bytes of the whole field, payload) each."""
    i = 0
    while i < len(data):
        start = i
        key, i = varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(data, i)
            payload = None
        elif wire == 1:
            i += 8
            payload = None
        elif wire == 5:
            i += 4
            payload = None
        elif wire == 2:
            n, i = varint(data, i)
            payload = data[i:i + n]
            i += n
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield number, wire, data[start:i], payload


def message(number, payload):
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + \
        payload


def rewrite(data, drop, nested):
    """Drops fields in `drop`; rewrites length-delimited fields in `nested`
    with the function given there."""
    out = bytearray()
    for number, wire, raw, payload in fields(data):
        if number in drop:
            continue
        if wire == 2 and number in nested:
            out += message(number, nested[number](payload))
        else:
            out += raw
    return bytes(out)


def main(argv):
    args = argv[1:]
    keep_nodes = "--keep-nodes" in args
    if keep_nodes:
        args.remove("--keep-nodes")
    replacements = []
    while "--replace-fx" in args:
        i = args.index("--replace-fx")
        replacements.append((args[i + 1].encode(), args[i + 2].encode()))
        del args[i:i + 3]
    src, dst = args

    def entry(payload):  # StringStringEntryProto: key 1, value 2
        def value(text):
            for old, new in replacements:
                text = text.replace(old, new)
            return text
        return rewrite(payload, set(), {2: value})

    if keep_nodes:
        node = lambda p: rewrite(p, set(), {9: entry})
        value_info = lambda p: p
        graph_drop = set()
    else:
        node = lambda p: rewrite(p, {9}, {})
        value_info = lambda p: rewrite(p, {4}, {})
        graph_drop = {16}
    # GraphProto: node 1, input 11, output 12, value_info 13.
    graph = lambda p: rewrite(p, graph_drop, {1: node, 11: value_info,
                                              12: value_info,
                                              13: value_info})
    with open(src, "rb") as f:
        model = f.read()
    with open(dst, "wb") as f:
        f.write(rewrite(model, set(), {7: graph}))  # ModelProto.graph = 7
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
