"""imagectl verify probe: the image's first step, and the files it took.

Imports torch and runs one matmul on the first CUDA device (CPU when there
is none, or with --device cpu), as a workload's first step does (with
--no-torch, for an image without torch: the interpreter's start alone), then
lists the image's files the process had open at that point, in the order
they came: the imported modules' files, then every file mapped into the
process (the interpreter, libpython, torch's and CUDA's shared libraries).
That list is what an eStargz image should hold first (imagectl build
--prioritized-files). Prints one JSON line.
"""
import json
import os
import sys
import time

T0 = time.time()

SKIP = ("/proc/", "/sys/", "/dev/", "/imagectl-probes/", "/memfd:", "/run/", "/tmp/")


def files():
    out, seen = [], set()

    def add(p):
        if not p or not p.startswith("/"):
            return
        p = os.path.realpath(p)
        if p in seen or p.startswith(SKIP) or not os.path.isfile(p):
            return
        seen.add(p)
        out.append(p)

    for m in list(sys.modules.values()):
        add(getattr(m, "__file__", None))
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    add(parts[5].strip())
    except OSError:
        pass
    return out


def main():
    device = "cuda"
    if "--device" in sys.argv:
        device = sys.argv[sys.argv.index("--device") + 1]
    out = {"probe": "firststep", "device": device}
    if "--no-torch" in sys.argv:
        out["device"] = "none"
        out["import_seconds"] = round(time.time() - T0, 3)
        out["step_seconds"] = 0.0
        out["files"] = files()
        print(json.dumps(out), flush=True)
        return
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - report any import failure
        out["error"] = "import torch: %s: %s" % (type(e).__name__, e)
        out["files"] = files()
        print(json.dumps(out), flush=True)
        return
    t1 = time.time()
    out["import_seconds"] = round(t1 - T0, 3)
    try:
        if device == "cuda" and not torch.cuda.is_available():
            device = out["device"] = "cpu"
        a = torch.randn(1024, 1024, device=device)
        s = float((a @ a).sum())
        if device == "cuda":
            torch.cuda.synchronize()
        out["checksum_finite"] = s == s and abs(s) != float("inf")
    except Exception as e:  # noqa: BLE001
        out["error"] = "first matmul on %s: %s: %s" % (device, type(e).__name__, e)
    out["step_seconds"] = round(time.time() - t1, 3)
    out["files"] = files()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
