"""Counts commands of the given kinds in each executable of a printed hrt
module: one line "@executable kind count" per executable and kind met, in
program order. Usage: commands.py FILE KIND..."""
import re
import sys

kinds = set(sys.argv[2:])
counts = {}
executable = None
with open(sys.argv[1]) as f:
    for line in f:
        m = re.search(r"hrt\.executable (@\w+)", line)
        if m:
            executable = m.group(1)
            continue
        m = re.match(r"\s*hrt\.(\w+)", line)
        if m and m.group(1) in kinds:
            key = (executable, m.group(1))
            counts[key] = counts.get(key, 0) + 1
for (executable, kind), n in counts.items():
    print(executable, kind, n)
