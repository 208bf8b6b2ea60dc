#!/usr/bin/env bash
# Run on the GPU host: one bench bundle's decode step under several
# environment settings (the kernels' switches: HYBRID_CUDA_STREAM,
# HYBRID_CUDA_SKINNY, HYBRID_CUDA_OMIT, ...), each in its own process, so
# that one device call compares them on the same machine. Prints ms per
# step, tokens/s and the captured step's operation count per variant.
#   bench/decode_variants.sh BUNDLE BATCH 'label:VAR=1 VAR2=x' ...
# A variant without '=' runs with the environment as it is. HYBRID_RUN
# names the binary (default /tmp/hybridc-gpu-host/bin/hybrid-run); ARGS
# replaces the generation flags (default: prompt 128, 128 new tokens,
# best of 3); DEVICE=cpu runs on the CPU.
set -uo pipefail
bundle=$1 batch=$2
shift 2
bin=${HYBRID_RUN:-/tmp/hybridc-gpu-host/bin/hybrid-run}
args=${ARGS:---prompt-len 128 --max-new-tokens 128 --repeat 3}
for variant in "$@"; do
  label=${variant%%:*}
  settings=""
  [[ $variant == *:* ]] && settings=${variant#*:}
  # shellcheck disable=SC2086 # settings and args are word lists
  line=$(env $settings timeout 120 "$bin" generate "$bundle" --random-weights 1 \
    --device "${DEVICE:-cuda}" --batch "$batch" $args 2>&1 |
    grep -oE 'decode [0-9.]+ ms/step, [0-9.]+ tokens/s|graph of [0-9]+' |
    tr '\n' ' ')
  printf '%-28s %s\n' "$label" "${line:-FAILED}"
done
