#!/usr/bin/env bash
# bench/plan_search.py against a stand-in hybrid-run (fake_hybrid_run.py)
# whose step is faster with two pins the products timed alone rank the
# other way: the search must find exactly those two and report them.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(python3 "$here/../../bench/plan_search.py" --hybrid-run "$here/fake_hybrid_run.py" \
  --bundle unused.hyb --repeat 1 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: plan_search.py exited $rc"; exit 1; }
grep -q "^default: 1.300 ms/step; 3 decode product shapes" <<<"$out" ||
  { echo "FAIL: the default run or the tune log was not read"; exit 1; }
grep -qx "found: 1x2048x50272=cublaslt,1x8192x2048=stream:1" <<<"$out" ||
  { echo "FAIL: the search did not find the two faster pins"; exit 1; }
grep -q "again: default 1.300 ms, found 1.270 ms" <<<"$out" ||
  { echo "FAIL: the check run does not show the found pins' time"; exit 1; }
echo "ok: plan_search found the step's faster plans"
