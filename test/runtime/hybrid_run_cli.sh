#!/usr/bin/env bash
# hybrid-run on good and bad input: exit codes (0 ok, 1 error, 2 usage) and
# exactly one "hybrid-run: error: ..." line on stderr for every failure.
# usage: hybrid_run_cli.sh HYBRID_RUN TESTDATA_GENERATOR WORKDIR [FIXTURES]
set -u
RUN=$1
GEN=$2
D=$3
FIX=${4:-}
rm -rf "$D" && mkdir -p "$D" && "$GEN" "$D" || { echo "FAIL: test data"; exit 1; }
failures=0

# check CODE PATTERN ARGS...: runs hybrid-run ARGS, expects exit CODE and, for
# a failure, one stderr line "hybrid-run: error: " containing PATTERN.
check() {
  local code=$1 pattern=$2
  shift 2
  "$RUN" "$@" >"$D/out.txt" 2>"$D/err.txt"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then
    echo "FAIL: hybrid-run $* -> exit $rc, expected $code"
    sed 's/^/    /' "$D/err.txt"
    failures=$((failures + 1))
    return
  fi
  if [ "$code" -ne 0 ]; then
    local lines
    lines=$(wc -l <"$D/err.txt")
    if [ "$lines" -ne 1 ] || ! grep -qF "hybrid-run: error: " "$D/err.txt" ||
       ! grep -qF -- "$pattern" "$D/err.txt"; then
      echo "FAIL: hybrid-run $* -> stderr lacks one line with '$pattern':"
      sed 's/^/    /' "$D/err.txt"
      failures=$((failures + 1))
      return
    fi
  fi
  echo "ok: hybrid-run $*"
}

FWD=(forward "$D/tiny.hyb" --inputs "$D/inputs.safetensors")

# Success paths.
check 0 "" "${FWD[@]}" --weights "$D/model.safetensors" --out "$D/a.safetensors"
grep -q "forward tiny-lm: .* params .* 2x3 tokens, .* ms, .* tokens/s" "$D/err.txt" ||
  { echo "FAIL: forward summary: $(cat "$D/err.txt")"; failures=$((failures + 1)); }
check 0 "" compare "$D/a.safetensors" "$D/expected.safetensors" --name logits --atol 1e-4
check 0 "" "${FWD[@]}" --weights "$D" --out "$D/b.safetensors" --threads 1
check 0 "" "${FWD[@]}" --weights="$D/tiny.onnx" --out="$D/c.safetensors"
check 0 "" compare "$D/b.safetensors" "$D/c.safetensors"
check 0 "" "${FWD[@]}" --weights "$D/weights_extra.safetensors" \
  --allow-extra lm_head.weight --out "$D/d.safetensors"
# --device cuda: the CPU's logits where a GPU is present, else one error
# line saying what is missing (the build's CUDA backend or the GPU).
"$RUN" "${FWD[@]}" --weights "$D" --out "$D/cuda.safetensors" --device cuda \
  >"$D/out.txt" 2>"$D/err.txt"
rc=$?
if [ $rc -eq 0 ]; then
  grep -q "forward tiny-lm on cuda:0: " "$D/err.txt" ||
    { echo "FAIL: cuda forward summary: $(cat "$D/err.txt")"; failures=$((failures + 1)); }
  check 0 "" compare "$D/cuda.safetensors" "$D/expected.safetensors" --name logits --atol 1e-4
elif [ $rc -eq 1 ] && [ "$(wc -l <"$D/err.txt")" -eq 1 ] && grep -q "hybrid-run: error: .*no CUDA" "$D/err.txt"; then
  echo "ok: --device cuda without a GPU: $(cat "$D/err.txt")"
else
  echo "FAIL: --device cuda -> exit $rc: $(cat "$D/err.txt")"
  failures=$((failures + 1))
fi
check 0 "" info "$D/tiny.hyb"
grep -q "model: tiny-lm" "$D/out.txt" && grep -q "input input_ids: i64 \[batch,seq\]" "$D/out.txt" &&
  grep -q "workspace: 1024\*batch\*seq bytes (alignment 256)" "$D/out.txt" &&
  grep -q "param wte.weight: f32 \[16,8\]" "$D/out.txt" && grep -q "param ln_f.bias: f32 \[8\]" "$D/out.txt" &&
  grep -q "symbols: batch, seq <= 32" "$D/out.txt" && grep -q "  params: read" "$D/out.txt" &&
  grep -q "  states: (none)" "$D/out.txt" && grep -q "commands: 3" "$D/out.txt" ||
  { echo "FAIL: info output:"; cat "$D/out.txt"; failures=$((failures + 1)); }
check 0 "" info "$D/state.hyb"
grep -q "^states: 1" "$D/out.txt" && grep -q "  state acc: f32" "$D/out.txt" &&
  grep -q "  state acc: f32 \[batch,4\], read_write" "$D/out.txt" &&
  grep -q "  state acc: f32 \[batch,4\], read$" "$D/out.txt" &&
  grep -q "symbols: batch <= 16" "$D/out.txt" ||
  { echo "FAIL: info output (states):"; cat "$D/out.txt"; failures=$((failures + 1)); }
check 0 "" --help

# compare: differences and missing tensors.
check 1 "compare: 1 of 1 tensors differ (atol 0.1)" compare "$D/expected.safetensors" "$D/shifted.safetensors" --atol 0.1
grep -q "logits: max |a-b| = 0.5 .* FAIL" "$D/out.txt" ||
  { echo "FAIL: compare output: $(cat "$D/out.txt")"; failures=$((failures + 1)); }
check 0 "" compare "$D/expected.safetensors" "$D/shifted.safetensors" --atol 0.6
check 1 "bundle 'tiny-lm' has no executable 'nope' (it has: forward)" forward "$D/tiny.hyb" --inputs "$D/inputs.safetensors" --weights "$D" --out "$D/x.safetensors" --executable nope
check 1 "no tensor 'nope'" compare "$D/a.safetensors" "$D/expected.safetensors" --name nope
check 1 "no tensor in common" compare "$D/inputs_missing.safetensors" "$D/expected.safetensors"

# Usage errors: exit 2.
check 2 "no subcommand" 
check 2 "unknown subcommand 'frobnicate'" frobnicate
check 2 "unknown flag '--bogus'" "${FWD[@]}" --weights "$D" --out "$D/x.safetensors" --bogus 1
check 2 "missing --weights" "${FWD[@]}" --out "$D/x.safetensors"
check 2 "--out needs a value" "${FWD[@]}" --weights "$D" --out
check 2 "--threads wants an integer from 1 to 4096" "${FWD[@]}" --weights "$D" --out "$D/x.safetensors" --threads zero
check 2 "--device wants cpu, cuda or cuda:N, got 'tpu'" "${FWD[@]}" --weights "$D" --out "$D/x.safetensors" --device tpu
check 2 "--threads applies to --device cpu only" "${FWD[@]}" --weights "$D" --out "$D/x.safetensors" --device cuda --threads 2
check 2 "--atol wants a non-negative number" compare "$D/a.safetensors" "$D/a.safetensors" --atol -1
check 2 "expected a BUNDLE" info
check 2 "unexpected argument 'extra'" info "$D/tiny.hyb" extra
check 2 "--weights given more than once" "${FWD[@]}" --weights "$D" --weights "$D" --out "$D/x.safetensors"
check 2 "backward: missing --inputs" backward "$D/tiny.hyb" --weights "$D" --out "$D/x.safetensors"

# Bad files: exit 1.
check 1 "missing.hyb: cannot open" info "$D/missing.hyb"
check 1 "truncated.hyb: truncated bundle" info "$D/truncated.hyb"
check 1 "corrupt.hyb: corrupt bundle: checksum mismatch" info "$D/corrupt.hyb"
check 1 "version.hyb: bundle format version 99; this runtime reads version 14" info "$D/version.hyb"
check 1 "v1.hyb: bundle format version 1; this runtime reads version 14: recompile it with hybridc" info "$D/v1.hyb"
check 1 "garbage.hyb: not a hybridc bundle" info "$D/garbage.hyb"
check 1 "not a hybridc bundle" info "$D/model.safetensors"
check 1 "unknown_op.hyb: invalid bundle: executable 'forward' command 0 has unknown op type 99" forward "$D/unknown_op.hyb" \
  --weights "$D" --inputs "$D/inputs.safetensors" --out "$D/x.safetensors"
check 1 "has no executable 'forward'" forward "$D/no_forward.hyb" \
  --weights "$D" --inputs "$D/inputs.safetensors" --out "$D/x.safetensors"
check 1 "missing tensor 'ln_f.bias'" "${FWD[@]}" --weights "$D/weights_missing.safetensors" --out "$D/x.safetensors"
check 1 "unexpected tensor 'lm_head.weight'" "${FWD[@]}" --weights "$D/weights_extra.safetensors" --out "$D/x.safetensors"
check 1 "tensor 'wte.weight' has shape [8,16], the bundle expects [16,8]" "${FWD[@]}" \
  --weights "$D/weights_misshaped.safetensors" --out "$D/x.safetensors"
check 1 "missing.safetensors: cannot open" "${FWD[@]}" --weights "$D/missing.safetensors" --out "$D/x.safetensors"
cp "$D/garbage.hyb" "$D/garbage.onnx"
check 1 "garbage.onnx: " "${FWD[@]}" --weights "$D/garbage.onnx" --out "$D/x.safetensors"
check 1 "input_ids: expected i64, got f32" forward "$D/tiny.hyb" --weights "$D" \
  --inputs "$D/inputs_f32.safetensors" --out "$D/x.safetensors"
check 1 "input_ids: expected i64, got f16" forward "$D/tiny.hyb" \
  --weights "$D" --inputs "$D/inputs_f16.safetensors" --out "$D/x.safetensors"
check 1 "tensor 'input_ids' is U8; forward takes input_ids: i64 [batch,seq]" forward "$D/tiny.hyb" \
  --weights "$D" --inputs "$D/inputs_u8.safetensors" --out "$D/x.safetensors"
check 1 "forward: seq = 33 exceeds its limit 32 (input_ids dim 1)" forward "$D/tiny.hyb" \
  --weights "$D" --inputs "$D/inputs_long.safetensors" --out "$D/x.safetensors"
check 1 "input_ids: expected rank 2 [batch,seq], got shape [6]" forward "$D/tiny.hyb" \
  --weights "$D" --inputs "$D/inputs_rank1.safetensors" --out "$D/x.safetensors"
check 1 "no tensor 'input_ids'" forward "$D/tiny.hyb" --weights "$D" \
  --inputs "$D/inputs_missing.safetensors" --out "$D/x.safetensors"
check 1 "cannot create" "${FWD[@]}" --weights "$D" --out "$D/no/such/dir/x.safetensors"
check 1 "tiny.hyb: no backward executable (compile the model with hybridc --train)" backward "$D/tiny.hyb" \
  --weights "$D" --inputs "$D/inputs.safetensors" --out "$D/x.safetensors"

# The reference fixtures, when present.
if [ -n "$FIX" ] && [ -f "$FIX/gpt2/ref.safetensors" ]; then
  check 0 "" compare "$FIX/gpt2/ref.safetensors" "$FIX/gpt2/ref.safetensors" --name logits --name loss
  check 1 "tensors differ" compare "$FIX/gpt2/ref.safetensors" "$FIX/opt/ref.safetensors" --name logits
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures hybrid-run check(s) failed"
  exit 1
fi
echo "all hybrid-run checks passed"
