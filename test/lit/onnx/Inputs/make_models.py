#!/usr/bin/env python3
"""Writes the small .onnx models the ONNX frontend's lit tests import.

Run from this folder (python3 make_models.py) after changing it; the models
are committed so the tests need no Python packages.
"""
import json
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def save(name, nodes, inputs, outputs, inits=(), opset=18, domains=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + [
        helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=opsets,
                              producer_name="make_models.py")
    model.ir_version = 8
    onnx.save(model, name + ".onnx")


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


# An op the conversion table does not have.
save("unsupported-op",
     [helper.make_node("Einsum", ["x", "x"], ["y"], name="my_einsum",
                       equation="ij,jk->ik")],
     [tensor("x", F, [4, 4])], [tensor("y", F, [4, 4])])

# Add before opset 7 (limited broadcasting) is not claimed.
save("old-opset",
     [helper.make_node("Add", ["x", "x"], ["y"], name="add0")],
     [tensor("x", F, [4])], [tensor("y", F, [4])], opset=6)

# An op from another domain.
save("custom-domain",
     [helper.make_node("FusedMatMul", ["x", "x"], ["y"], name="fused",
                       domain="com.microsoft")],
     [tensor("x", F, [4, 4])], [tensor("y", F, [4, 4])],
     domains=["com.microsoft"])

# Reshape whose target shape is a graph input: a data-dependent shape.
save("data-dependent-shape",
     [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_by_input")],
     [tensor("x", F, [2, 6]), tensor("shape", I64, [2])],
     [tensor("y", F, [3, 4])])

# A weight kept in an external file that does not exist (no weights.bin).
w = numpy_helper.from_array(np.zeros((4, 4), np.float32), "w")
w.ClearField("raw_data")
w.data_location = TensorProto.EXTERNAL
w.external_data.add(key="location", value="weights.bin")
save("external-data",
     [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
     [tensor("x", F, [2, 4])], [tensor("y", F, [2, 4])], inits=[w])

# A slice of a symbolic dim whose clamping depends on the size.
save("unresolvable-slice",
     [helper.make_node("Slice", ["x", "zero", "eight"], ["y"],
                       name="first_eight")],
     [tensor("x", F, ["seq", 4])], [tensor("y", F, [None, 4])],
     inits=[const("zero", [0]), const("eight", [8])])

# Softmax before opset 13 normalises over all dims from `axis` on.
for opset in (11, 13):
    save(f"softmax-opset{opset}",
         [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)],
         [tensor("x", F, ["batch", 3, 4])], [tensor("y", F, ["batch", 3, 4])],
         opset=opset)

# Shape arithmetic folded to symbolic sizes, run on two input sizes against
# onnx's reference evaluator. x [batch, seq, 8]:
#   y   = reshape(x, [batch*seq, 8]) / seq   (sizes via Shape / Gather / Mul,
#                                             seq also used as tensor data)
#   pos = range(past, past + seq)            (constant past = 3)
#   z   = x[:, :seq-1]                       (slice bound seq - 1)
#   e   = x + expand(bias, [batch, seq, 8]) * constant_of_shape([batch, 1, 1], 2)
save("symbolic-shapes",
     [
         helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("Gather", ["s", "i0"], ["b"], name="batch", axis=0),
         helper.make_node("Gather", ["s", "i1"], ["t"], name="seq", axis=0),
         helper.make_node("Mul", ["b", "t"], ["bt"], name="rows"),
         helper.make_node("Unsqueeze", ["bt", "axis0"], ["bt1"], name="rows1"),
         helper.make_node("Concat", ["bt1", "eight"], ["target"], name="target",
                          axis=0),
         helper.make_node("Reshape", ["x", "target"], ["flat"], name="flatten"),
         helper.make_node("Cast", ["t"], ["tf"], name="seq_as_float", to=F),
         helper.make_node("Div", ["flat", "tf"], ["y"], name="scale"),
         helper.make_node("Add", ["t", "past"], ["end"], name="end"),
         helper.make_node("Range", ["past", "end", "one"], ["pos"], name="positions"),
         helper.make_node("Sub", ["t", "one"], ["t1"], name="seq_minus_1"),
         helper.make_node("Unsqueeze", ["t1", "axis0"], ["t1v"], name="t1v"),
         helper.make_node("Slice", ["x", "zero1", "t1v", "one1"], ["z"],
                          name="drop_last"),
         helper.make_node("Unsqueeze", ["b", "axis0"], ["b1"], name="b1"),
         helper.make_node("Unsqueeze", ["t", "axis0"], ["t1d"], name="t1d"),
         helper.make_node("Concat", ["b1", "t1d", "eight"], ["bts"], name="bts",
                          axis=0),
         helper.make_node("Expand", ["bias", "bts"], ["bx"], name="expand_bias"),
         helper.make_node("Concat", ["b1", "one1", "one1"], ["b11"], name="b11",
                          axis=0),
         helper.make_node("ConstantOfShape", ["b11"], ["twos"], name="twos",
                          value=numpy_helper.from_array(
                              np.array([2.0], np.float32))),
         helper.make_node("Mul", ["bx", "twos"], ["bx2"], name="bias_times_two"),
         helper.make_node("Add", ["x", "bx2"], ["e"], name="add_bias"),
     ],
     [tensor("x", F, ["batch", "seq", 8])],
     [tensor("y", F, [None, 8]), tensor("pos", I64, [None]),
      tensor("z", F, ["batch", None, 8]), tensor("e", F, ["batch", "seq", 8])],
     inits=[const("i0", 0), const("i1", 1), const("axis0", [0]),
            const("eight", [8]), const("past", 3), const("one", 1),
            const("zero1", [0]), const("one1", [1]),
            const("bias", np.arange(8) * 0.25, np.float32)])


def save_safetensors(path, tensors):
    """The safetensors format: u64 header size, JSON header, raw data."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[a.dtype]
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# Inputs and reference outputs of symbolic-shapes on two sizes.
from onnx.reference import ReferenceEvaluator  # noqa: E402

reference = ReferenceEvaluator("symbolic-shapes.onnx")
rng = np.random.default_rng(0)
for batch, seq in ((2, 5), (3, 1)):
    x = rng.standard_normal((batch, seq, 8)).astype(np.float32)
    y, pos, z, e = reference.run(None, {"x": x})
    tag = f"symbolic-shapes-{batch}x{seq}"
    save_safetensors(tag + ".in.safetensors", {"x": x})
    save_safetensors(tag + ".ref.safetensors",
                     {"y": y, "pos": pos, "z": z, "e": e})
