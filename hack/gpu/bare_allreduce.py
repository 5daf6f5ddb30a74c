"""Baseline for the verify stage's all-reduce: a bare torch all_reduce.

Run with torchrun (one process per GPU):
  python3 -m torch.distributed.run --nproc-per-node 2 hack/gpu/bare_allreduce.py --bytes 268435456
Times --iters all-reduces (after --warmup) with perf_counter around a
synchronize, and prints one JSON line from rank 0 with the same bus
bandwidth formula as the verify probe: busbw = algbw * 2(n-1)/n.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bytes", type=int, default=256 << 20)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args()
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    n = dist.get_world_size()
    x = torch.ones(a.bytes // 4, dtype=torch.float32, device="cuda")
    for _ in range(a.warmup):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t = (time.perf_counter() - t0) / a.iters
    algbw = a.bytes / t / 1e9
    if dist.get_rank() == 0:
        print(json.dumps({"bare_allreduce": True, "world_size": n, "bytes": a.bytes, "iters": a.iters,
                          "seconds_per_iter": t, "algbw_gbps": algbw, "busbw_gbps": algbw * 2 * (n - 1) / n}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
