#!/usr/bin/env python3
"""Static bytes per command kind of one executable of `hybridc
--compile-to=hrt` output, at concrete symbol values: every buffer a command
reads or writes counted once per command (what a kernel that streams its
operands once moves), and that total over a bandwidth. A floor estimate of
a graph's memory traffic, not a measurement: it says where the bytes are
before a profiler says where the time is.

  hybridc compile bench/models/opt-1.3b --train --dtype=bfloat16 \\
      --no-generate --compile-to=hrt > opt-train.hrt
  python3 bench/hrt_bytes.py opt-train.hrt train_step batch=8 seq=512
"""
import argparse
import collections
import re
import sys

SIZES = {"f32": 4, "bf16": 2, "f16": 2, "i64": 8, "i32": 4, "i1": 1}
BUFFER = re.compile(r"<(f32|bf16|f16|i64|i32|i1), \[([^\]]*)\]>")
NOT_COMMANDS = {"alloc", "param", "state", "view", "constant", "input",
                "output", "communicator", "executable"}


def elements(dims, symbols):
    n = 1
    for d in (x.strip().strip('"') for x in dims.split(",") if x.strip()):
        n *= int(eval(d, {"__builtins__": {}}, symbols))
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hrt", help="hybridc --compile-to=hrt output")
    ap.add_argument("executable", help="e.g. train_step, decode")
    ap.add_argument("symbols", nargs="*", help="NAME=VALUE, e.g. batch=8")
    ap.add_argument("--bandwidth", type=float, default=3.4e12,
                    help="bytes per second (default 3.4e12: an H200's "
                    "measured copy rate in bench/RESULTS.md)")
    ap.add_argument("--top", type=int, default=16)
    args = ap.parse_args()
    symbols = {k: int(v) for k, v in (s.split("=", 1) for s in args.symbols)}
    lines = open(args.hrt).read().split("\n")
    head = "hrt.executable @" + args.executable + " "
    try:
        start = next(i for i, l in enumerate(lines) if l.strip().startswith(head))
    except StopIteration:
        sys.exit(f"hrt_bytes: no executable @{args.executable} in {args.hrt}")
    kinds = collections.defaultdict(lambda: [0, 0])
    for line in lines[start + 1:]:
        s = line.strip()
        if s.startswith("hrt.executable @"):
            break
        m = re.match(r"hrt\.(\w+)(?: (\w+))?", s)
        if not m or m.group(1) in NOT_COMMANDS:
            continue
        kind = m.group(1)
        if m.group(2) and kind in ("binary", "unary", "reduce",
                                   "activation_grad"):
            kind += "." + m.group(2)
        try:
            moved = sum(SIZES[t] * elements(d, symbols)
                        for t, d in BUFFER.findall(s))
        except NameError as e:
            sys.exit(f"hrt_bytes: give a value for {e.name} (NAME=VALUE)")
        kinds[kind][0] += 1
        kinds[kind][1] += moved
    total = sum(b for _, b in kinds.values())
    count = sum(c for c, _ in kinds.values())
    ms = lambda b: b / args.bandwidth * 1e3
    print(f"@{args.executable}: {count} commands, {total / 1e9:.1f} GB "
          f"touched, {ms(total):.1f} ms at {args.bandwidth / 1e12:.1f} TB/s")
    for kind, (c, b) in sorted(kinds.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"  {kind:22s} {c:6d} commands {b / 1e9:8.2f} GB {ms(b):8.2f} ms")


if __name__ == "__main__":
    main()
