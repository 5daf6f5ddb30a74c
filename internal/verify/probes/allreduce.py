"""imagectl verify probe: NCCL all-reduce over every visible GPU.

One process per GPU (torch.multiprocessing, spawn), torch.distributed with
the nccl backend. Each rank fills a float32 tensor with rank+1; after one
all-reduce every element must equal n(n+1)/2. Then it times --iters
all-reduces of --bytes (after --warmup) with CUDA events and reports the
slowest rank's average time, the algorithm bandwidth (bytes/time) and the
bus bandwidth (algbw * 2(n-1)/n, as nccl-tests defines it).

Prints one JSON line.
"""
import argparse
import json
import os
import socket
import sys
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def worker(rank, n, port, nbytes, iters, warmup, q):
    import torch
    import torch.distributed as dist

    try:
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port,
                                rank=rank, world_size=n, device_id=dev)
        numel = nbytes // 4
        x = torch.full((numel,), float(rank + 1), dtype=torch.float32, device=dev)
        dist.all_reduce(x)
        want = n * (n + 1) / 2
        bad = int((x != want).sum().item())
        first = float(x[0].item())
        del x
        y = torch.ones(numel, dtype=torch.float32, device=dev)
        for _ in range(warmup):
            dist.all_reduce(y)
        torch.cuda.synchronize()
        dist.barrier()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dist.all_reduce(y)
        end.record()
        torch.cuda.synchronize()
        secs = torch.tensor([start.elapsed_time(end) / 1000.0 / iters], device=dev)
        dist.all_reduce(secs, op=dist.ReduceOp.MAX)
        if rank == 0:
            t = float(secs.item())
            algbw = nbytes / t / 1e9
            q.put({"ok": bad == 0, "bad_elements": bad, "first": first, "want": want,
                   "seconds_per_iter": t, "algbw_gbps": algbw,
                   "busbw_gbps": algbw * 2 * (n - 1) / n})
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001 - the parent reports it
        q.put({"error": "rank %d: %s: %s" % (rank, type(e).__name__, e)})
        raise


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bytes", type=int, default=256 << 20)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args()
    out = {"probe": "allreduce", "bytes": a.bytes, "iters": a.iters}
    t0 = time.perf_counter()
    try:
        import torch
        import torch.multiprocessing as mp
    except Exception as e:  # noqa: BLE001
        out["error"] = "import torch: %s" % e
        print(json.dumps(out), flush=True)
        return
    n = torch.cuda.device_count()
    out["world_size"] = n
    if n == 0:
        out["error"] = "no CUDA device visible to torch"
        print(json.dumps(out), flush=True)
        return
    q = mp.get_context("spawn").SimpleQueue()
    try:
        mp.spawn(worker, args=(n, free_port(), a.bytes, a.iters, a.warmup, q), nprocs=n, join=True)
    except Exception as e:  # noqa: BLE001
        out["error"] = "%s: %s" % (type(e).__name__, e)
    while not q.empty():
        r = q.get()
        if "error" in r and "error" not in out:
            out["error"] = r["error"]
        out.update({k: v for k, v in r.items() if k != "error"})
    out["wall_s"] = time.perf_counter() - t0
    print(json.dumps(out), flush=True)
    os._exit(0)  # the ranks have exited; skip the parent's teardown


if __name__ == "__main__":
    sys.exit(main())
