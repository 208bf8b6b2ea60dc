"""Counts the collectives of each executable of a printed hrt module: one
line "@executable kind count" per executable and kind, in program order."""
import re
import sys

counts = {}
executable = None
with open(sys.argv[1]) as f:
    for line in f:
        m = re.search(r"hrt\.executable (@\w+)", line)
        if m:
            executable = m.group(1)
        m = re.search(r"hrt\.collective (\w+)", line)
        if m:
            key = (executable, m.group(1))
            counts[key] = counts.get(key, 0) + 1
for (executable, kind), n in counts.items():
    print(executable, kind, n)
