#!/usr/bin/env bash
# find_package(hybridc) from outside the tree: installs BUILD into a
# temporary prefix, builds examples/train_and_generate against it, trains
# the gpt2 fixture a few steps and generates from it. Passes when the loss
# falls and the same engine then generates the memorised sequences'
# continuation; skips (exit 77), saying why, without the fixture or a way
# to compile its bundle.
# usage: example_test.sh BUILD SOURCE FIXTURES WORK GENERATOR CXX
set -euo pipefail
build=$1 src=$2 fixtures=$3 work=$4 generator=$5 cxx=$6
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ -f "$fixtures/gpt2/config.json" ] || skip "no gpt2 fixture in $fixtures"
# The bundle: compiled by the installed hybridc, else one staged beside the
# fixture for a host without the compiler (test/gpu/prepare.sh).
[ -x "$build/bin/hybridc" ] || [ -f "$fixtures/gpt2/train.hyb" ] ||
  skip "this build has no hybridc and $fixtures/gpt2 no train.hyb to run"
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
  fail "cmake --install: $(tail -3 "$work/install.log")"
bundle=$work/gpt2-train.hyb
if [ -x "$prefix/bin/hybridc" ]; then
  "$prefix/bin/hybridc" compile "$fixtures/gpt2" --train -o "$bundle" -q
else
  cp "$fixtures/gpt2/train.hyb" "$bundle"
fi

# Outside the tree: nothing of the build but what the prefix holds.
cmake -S "$src/examples/train_and_generate" -B "$work/example" \
  -G "$generator" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" 2>&1 ||
  fail "configuring the example: $(cat "$work/configure.log")"
cmake --build "$work/example" >"$work/build.log" 2>&1 ||
  fail "building the example: $(cat "$work/build.log")"

"$work/example/train_and_generate" "$bundle" "$fixtures/gpt2" \
  "$fixtures/gpt2/ref.safetensors" 10 | tee "$work/run.log"
python3 - "$work/run.log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
losses = [float(x) for x in re.findall(r"^step \d+: loss ([0-9.]+)", text, re.M)]
rows = {kind: [r.split() for r in re.findall(rf"^  {kind}: +([\d ]+)$", text, re.M)]
        for kind in ("data", "generated")}
data, generated = rows["data"], rows["generated"]
if len(losses) != 10:
    sys.exit(f"FAIL: expected 10 steps' losses, got {losses}")
if not losses[-1] < 0.5 * losses[0]:
    sys.exit(f"FAIL: the loss did not fall: {losses[0]} -> {losses[-1]}")
if len(generated) != 2 or any(len(g) != 8 for g in generated):
    sys.exit(f"FAIL: expected 8 generated tokens per sequence, got {generated}")
# Generation reads the weights the steps wrote: the memorised sequences.
if generated != data:
    sys.exit(f"FAIL: generated {generated}, the training data goes on {data}")
print(f"ok: loss {losses[0]} -> {losses[-1]}; the trained weights generate "
      "the training data's continuation")
PY
