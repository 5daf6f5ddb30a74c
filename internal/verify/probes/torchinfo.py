"""imagectl verify probe: what torch sees.

Prints one JSON line: torch, CUDA runtime, cuDNN and NCCL versions, whether
CUDA is available, the device count and each device's name and compute
capability, torch's compiled arch list, and the kernel driver version from
/proc when the container has it.
"""
import json
import re
import sys


def driver_from_proc():
    try:
        with open("/proc/driver/nvidia/version") as f:
            # "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
            m = re.search(r"Kernel Module\b.*?\s(\d+\.\d+(?:\.\d+)*)\s", f.readline() + " ")
            return m.group(1) if m else None
    except OSError:
        return None


def main():
    out = {"probe": "torch", "driver": driver_from_proc()}
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - report any import failure
        out["error"] = "import torch: %s: %s" % (type(e).__name__, e)
        print(json.dumps(out), flush=True)
        return
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda
    try:
        out["cudnn"] = torch.backends.cudnn.version()
    except Exception as e:  # noqa: BLE001
        out["cudnn"] = None
        out["cudnn_error"] = str(e)
    try:
        v = torch.cuda.nccl.version()
        out["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception as e:  # noqa: BLE001
        out["nccl"] = None
        out["nccl_error"] = str(e)
    out["cuda_available"] = bool(torch.cuda.is_available())
    out["device_count"] = torch.cuda.device_count() if out["cuda_available"] else 0
    out["devices"] = []
    for i in range(out["device_count"]):
        maj, mnr = torch.cuda.get_device_capability(i)
        out["devices"].append({"name": torch.cuda.get_device_name(i), "capability": "%d.%d" % (maj, mnr)})
    try:
        out["arch_list"] = torch.cuda.get_arch_list()
    except Exception:  # noqa: BLE001
        out["arch_list"] = []
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
