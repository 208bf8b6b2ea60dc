#!/usr/bin/env bash
# Run on the GPU host after test/gpu/run.sh built the runtime there: the GPU
# time of every kernel of one decode step, measured by Nsight Compute (each
# kernel alone, so launch gaps are not in it), for a bench bundle at a batch
# size. Decode runs command by command (--no-cuda-graph) so that ncu sees
# plain launches; the last decode step's kernels are taken as the last OPS
# launches (OPS: the kernel count of a step, e.g. the graph size that
# `hybrid-run generate` reports, less its copy nodes). Tuned under the
# profiler, the GEMM plans would follow timings Nsight Compute distorts, so
# a plain run (captured graph, tune log on) goes first and the profiled run
# takes its plans as HYBRID_CUDA_PLANS pins (bench/tune_log.py); pins
# already in the environment are kept as they are.
#   bench/decode_kernels.sh BUNDLE BATCH PROMPT OPS [OUT.csv]
# Prints the pins, one line per kernel and grid (calls, mean and total µs,
# share) and the step's total kernel time.
set -euo pipefail
bundle=$1 batch=$2 prompt=$3 ops=$4 csv=${5:-/tmp/decode-kernels.csv}
bin=${HYBRID_RUN:-/tmp/hybridc-gpu-host/bin/hybrid-run}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ -z "${HYBRID_CUDA_PLANS:-}" ]; then
  HYBRID_CUDA_TUNE_LOG=1 "$bin" generate "$bundle" --random-weights 0 --device cuda \
    --batch "$batch" --prompt-len "$prompt" --max-new-tokens 8 --greedy \
    > /dev/null 2> "$csv.tune.log" || { tail -5 "$csv.tune.log"; exit 1; }
  HYBRID_CUDA_PLANS=$(python3 "$(dirname "$0")/tune_log.py" "$csv.tune.log")
  export HYBRID_CUDA_PLANS
fi
echo "plans: ${HYBRID_CUDA_PLANS:-(none tuned)}"
"$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
  --print-units base --print-kernel-base function "$bin" generate "$bundle" --random-weights 0 --device cuda \
  --batch "$batch" --prompt-len "$prompt" --max-new-tokens 3 --greedy \
  --no-cuda-graph > "$csv" 2> "$csv.log" || { tail -5 "$csv.log"; exit 1; }
python3 - "$csv" "$ops" <<'PY'
import csv, sys, collections
rows = []
with open(sys.argv[1]) as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    if r.get("Metric Name") == "gpu__time_duration.sum":
        rows.append((int(r["ID"]), "%s %s" % (r["Kernel Name"], r.get("Grid Size", "")),
                     float(r["Metric Value"].replace(",", "")) / 1e3))
rows.sort()
step = rows[-int(sys.argv[2]):]
by = collections.OrderedDict()
for _, name, us in step:
    short = name[-56:]
    c = by.setdefault(short, [0, 0.0])
    c[0] += 1; c[1] += us
total = sum(us for _, _, us in step)
for name, (n, us) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print("%-56s %5d x %8.2f us = %9.1f us  %5.1f%%" % (name, n, us / n, us, 100 * us / total))
print("last decode step: %d kernels, %.1f us of kernel time" % (len(step), total))
PY
