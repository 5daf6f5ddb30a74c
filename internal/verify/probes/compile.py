"""imagectl verify probe: torch.compile and its on-disk cache.

Run twice, in two processes, with the same --cache-dir: the first (cold)
compiles and fills TORCHINDUCTOR_CACHE_DIR, the second (warm) must load the
compiled graph from it. Reports the time of the first compiled call, whether
its result equals eager mode, and Inductor's cache counters
(torch._dynamo.utils.counters). Prints one JSON line.
"""
import argparse
import json
import os
import shutil
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cache-dir", required=True)
    p.add_argument("--phase", choices=["cold", "warm"], required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--remove-after", action="store_true")
    a = p.parse_args()
    os.makedirs(a.cache_dir, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = a.cache_dir
    os.environ["TRITON_CACHE_DIR"] = os.path.join(a.cache_dir, "triton")
    # One small graph: compile in this process instead of starting Inductor's
    # pool of compile workers (seconds of start-up and shutdown).
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    out = {"probe": "compile-" + a.phase, "cache_dir": a.cache_dir, "device": a.device}
    t0 = time.perf_counter()
    try:
        import torch
        from torch._dynamo.utils import counters
    except Exception as e:  # noqa: BLE001
        out["error"] = "import torch: %s" % e
        print(json.dumps(out), flush=True)
        return
    out["import_s"] = time.perf_counter() - t0

    def f(x, y):
        return torch.nn.functional.gelu(x @ y) + torch.sin(x).sum(dim=-1, keepdim=True)

    try:
        dev = torch.device(a.device)
        g = torch.Generator(device=dev).manual_seed(0)
        x = torch.randn(512, 512, device=dev, generator=g)
        y = torch.randn(512, 512, device=dev, generator=g)
        cf = torch.compile(f)
        t1 = time.perf_counter()
        got = cf(x, y)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        out["first_call_s"] = time.perf_counter() - t1
        out["ok"] = bool(torch.allclose(got, f(x, y), rtol=1e-2, atol=1e-2))
    except Exception as e:  # noqa: BLE001
        out["error"] = "%s: %s" % (type(e).__name__, e)
    out["inductor"] = {k: int(v) for k, v in counters["inductor"].items() if "cache" in k}
    out["aot_autograd"] = {k: int(v) for k, v in counters["aot_autograd"].items() if "cache" in k}
    out["total_s"] = time.perf_counter() - t0
    if a.remove_after:
        shutil.rmtree(a.cache_dir, ignore_errors=True)
    print(json.dumps(out), flush=True)
    # Skip interpreter teardown (Inductor and CUDA atexit hooks): the
    # result is printed, and the next process must not wait for this one.
    os._exit(0)


if __name__ == "__main__":
    main()
