"""imagectl verify probe: what torch sees.

Prints one JSON line: torch, CUDA runtime, cuDNN and NCCL versions, whether
CUDA is available, the device count and each device's name and compute
capability, torch's compiled arch list, the kernel driver version from
/proc when the container has it, and the torch family: the versions of
torchvision and torchaudio when installed, and with CUDA a torchvision CUDA
op (torchvision.ops.nms), which is where a torchvision built for another
torch fails (pytorch/vision#4222).
"""
import importlib
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


def family(torch, cuda):
    out = {}
    for name in ("torchvision", "torchaudio"):
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue  # not installed: verify checks the lock says so too
            out[name] = {"error": "import %s: %s: %s" % (name, type(e).__name__, e)}
            continue
        except Exception as e:  # noqa: BLE001 - an ABI mismatch raises anything
            out[name] = {"error": "import %s: %s: %s" % (name, type(e).__name__, e)}
            continue
        out[name] = {"version": str(getattr(mod, "__version__", ""))}
    tv = out.get("torchvision")
    if cuda and tv and "error" not in tv:
        try:
            import torchvision

            boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], dtype=torch.float32, device="cuda")
            scores = torch.tensor([0.9, 0.8, 0.7], dtype=torch.float32, device="cuda")
            tv["nms"] = [int(i) for i in torchvision.ops.nms(boxes, scores, 0.5).cpu().tolist()]
        except Exception as e:  # noqa: BLE001
            tv["nms_error"] = "%s: %s" % (type(e).__name__, e)
    return out


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
    out["family"] = family(torch, out["cuda_available"])
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
