"""Writes a synthetic HYBRID_CUDA_TIMELINE log for bench/timeline.py's test:
a warm-up of other launches, then STEPS steps of an 11-launch decode step
(an embedding, three layers of three kernels, a sampling kernel) whose
costs are known: 2 us each, but 5 us for the second layer's attention and
9 us for the sampling kernel; every kernel resident 0.7 us before it
starts. Start times jitter by +-0.3 us (the averages must still resolve).
  make_timeline.py OUT.csv [STEPS]"""
import random
import sys

out, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40
rng = random.Random(7)
rows = ["grid_x,grid_y,grid_z,threads,arrive_ns,start_ns"]
t = 1_000_000
for _ in range(25):  # warm-up and prefill: no period
    rows.append(f"{rng.randint(1, 600)},1,1,256,{t - 500},{t}")
    t += 3000
step = [(4, 128, 2000)]
for layer in range(3):
    step += [(132, 256, 2000), (32, 128, 5000 if layer == 1 else 2000),
             (528, 256, 2000)]
step += [(1, 1024, 9000)]
for _ in range(steps):
    for grid, threads, cost in step:
        rows.append(f"{grid},1,1,{threads},{t - 700},{t}")
        t += cost + rng.randint(-300, 300)
open(out, "w").write("\n".join(rows) + "\n")
