"""The vocabulary of ops.py, the one definition of every hrt command.

An op here is at once: the hrt dialect's command (its ODS), the runtime's
typed op (hybrid/Ops.h's struct, one alternative of hybrid::Op), the
bundle's table and union member (ops.fbs), their encoder and decoder, the
compiler's conversion from the hrt op to the struct, the kernel slots every
backend fills, and the named operands kernels read (kernels/common's
*Args). gen_ops.py writes all of them from this description; nothing else
spells them out. Standard library only: the runtime-only build has no LLVM.
"""

from dataclasses import dataclass, field
from typing import List, Optional, Tuple


def camel(snake: str) -> str:
    """key_length -> keyLength (C++ members)."""
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def pascal(snake: str) -> str:
    """key_length -> KeyLength (ODS accessors: getKeyLength)."""
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_"))


@dataclass
class Case:
    """One enumerator. `cpp` names it in C++, the bundle and ODS; `asm` is
    its spelling in hrt IR; `display` the hg mnemonic messages use (default
    `asm`); `kernel` the kernel entry point of families dispatched by kind.
    """

    cpp: str
    asm: str
    display: Optional[str] = None
    kernel: Optional[str] = None
    doc: str = ""


@dataclass
class Enum:
    """A kind enum (bundle values are the cases' positions: append only)."""

    name: str
    summary: str
    cases: List[Case]
    doc: str = ""
    # The C++ function naming a value ("binaryKindName").
    name_function: str = ""


# Attribute kinds: (C++ type, FlatBuffers type, ODS constraint).
SCALARS = {
    "i64": ("int64_t", "long", "I64Attr"),
    "i32": ("int32_t", "int", "I32Attr"),
    "f64": ("double", "double", "F64Attr"),
    "bool": ("bool", "bool", "BoolAttr"),
    "i64s": ("std::vector<int64_t>", "[long]", "DenseI64ArrayAttr"),
    "opt_f64": ("std::optional<double>", "double", "OptionalAttr<F64Attr>"),
}


@dataclass
class Attr:
    """An attribute of the op.

    `kind` is a key of SCALARS or an Enum. `default` is the struct's and the
    bundle's default (a Python value; an enum case's cpp name). `ods` says
    how the hrt op spells it: "required", "default" (DefaultValuedAttr with
    the same default) or "optional" (opt_f64). `lead`: printed before the
    operands in the default assembly format. `derived`, when set, means the
    hrt op has no such attribute: the struct field is this C++ expression
    over the hrt op `c` (an optional operand's presence, say).
    """

    name: str
    kind: object
    default: object = None
    ods: str = "required"
    lead: bool = False
    derived: Optional[str] = None
    doc: str = ""


@dataclass
class Operand:
    """A buffer the command reads (`kind` "in", "opt" or "var") or writes
    ("out", "opt_out", "var_out"), or its communicator ("comm": an hrt
    operand, an index in the runtime's struct). `keyword` prefixes an
    optional operand in the default assembly format (default: its name).
    """

    name: str
    kind: str = "in"
    keyword: Optional[str] = None
    doc: str = ""
    # An optional operand that a struct field makes required (attention's
    # appended keys exactly when it appends).
    required_when: Optional[str] = None
    # Whether a kernel call may leave it off (with every trailing one after
    # it) instead of passing it absent: the operands only some calls take.
    trailing: bool = False


def In(name, doc=""):
    return Operand(name, "in", doc=doc)


def Opt(name, keyword=None, doc="", required_when=None, trailing=False):
    return Operand(name, "opt", keyword, doc, required_when, trailing)


def Var(name, doc=""):
    return Operand(name, "var", doc=doc)


def Out(name="out", doc=""):
    return Operand(name, "out", doc=doc)


def OptOut(name, doc=""):
    return Operand(name, "opt_out", doc=doc)


def VarOut(name, doc=""):
    return Operand(name, "var_out", doc=doc)


def Comm(name="communicator"):
    return Operand(name, "comm")


@dataclass
class HgForm:
    """The op's graph form: an hg op whose operands are the command's
    inputs and whose results are its outs, as tensors, with the same
    attributes; it lowers to the command one to one.

    `types` maps an operand or result name to its ODS tensor constraint
    (default Hg_FloatTensor). `shape` "same": every operand and result has
    one shape and the results the first operand's element type unless
    `types` says otherwise (generated inference, verifier and symbolic
    rule); "custom": the op's shape rule is hand-written (its
    inferReturnTypes and verify in dialects/hg/IR). `format` overrides the
    default assembly format.
    """

    types: dict = field(default_factory=dict)
    shape: str = "same"
    format: Optional[str] = None
    summary: Optional[str] = None


@dataclass
class Op:
    """An hrt command and the runtime op it serialises to.

    `name` is the C++ family (ops::Attention, the bundle table Attention,
    hrt::AttentionOp); `mnemonic` the hrt op's (hrt.attention). `outs` and
    `ins` are the ODS operands in order; the runtime's operands are `ins`
    (buffers only) in the same order, an absent optional one kept as -1.
    `side_writes` are inputs the command also writes, appended to its
    results when `side_writes_when` (a struct field) holds. `kernel` is the
    kernel entry point's name (None: the backend's own business, e.g.
    events), `kinds` the Enum attribute that picks one kernel per case, and
    `scratch` whether the kernels declare scratch memory.

    `display` (C++ over the struct `o`) names the op in messages when
    neither its kind's name nor its mnemonic does. `arity` and
    `result_count` override the derived counts (C++ over the struct `o`),
    `optional_operand` which operand positions (`position`) may be absent; `format` the default assembly format; `ods_extra` adds
    verbatim ODS (extraClassDeclaration for ops whose inputs are not in
    group order); `verifier` False gives the op the generic command
    verifier instead of a hand-written one in HrtOps.cpp. `hg` gives the op
    a graph form (HgForm) generated with it.
    """

    name: str
    mnemonic: str
    summary: str
    doc: str
    outs: List[Operand] = field(default_factory=list)
    ins: List[Operand] = field(default_factory=list)
    attrs: List[Attr] = field(default_factory=list)
    description: str = ""
    display: Optional[str] = None
    kernel: Optional[str] = "auto"
    kinds: Optional[str] = None
    scratch: bool = False
    side_writes: Tuple[str, ...] = ()
    side_writes_when: Optional[str] = None
    arity: Optional[str] = None
    result_count: Optional[str] = None
    optional_operand: Optional[str] = None
    format: Optional[str] = None
    ods_extra: str = ""
    ods_attr_order: Optional[Tuple[str, ...]] = None
    verifier: bool = True
    hg: Optional[HgForm] = None

    # -- derived views --------------------------------------------------------

    @property
    def buffer_ins(self):
        return [o for o in self.ins if o.kind in ("in", "opt", "var")]

    @property
    def comm(self):
        return [o for o in self.ins if o.kind == "comm"]

    @property
    def struct_attrs(self):
        return self.attrs

    @property
    def ods_attrs(self):
        attrs = [a for a in self.attrs if a.derived is None]
        if self.ods_attr_order:
            by_name = {a.name: a for a in attrs}
            attrs = [by_name[n] for n in self.ods_attr_order]
        return attrs

    @property
    def kernel_name(self):
        if self.kernel == "auto":
            return self.name[:1].lower() + self.name[1:]
        return self.kernel

    @property
    def variadic(self):
        return any(o.kind in ("var", "var_out") for o in self.ins + self.outs)
