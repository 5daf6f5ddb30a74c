"""imagectl verify probe: the CPU-side facts every image can report.

Prints one JSON line: the interpreter version, the installed distributions
(name, version), /dev/shm size, TMPDIR, the cache variables, the init's
fingerprint and the base's CUDA toolkit as the image states it three ways
(CUDA_VERSION in the environment the container got from the image config,
/usr/local/cuda/version.json, the installed cuda-cudart-X-Y deb). Standard
library only.
"""
import argparse
import json
import os
import re
import sys


def installed():
    from importlib import metadata

    seen = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key not in seen:  # first on sys.path wins, as for pip
            seen[key] = dist.version
    return sorted([k, v] for k, v in seen.items())


def fs_bytes(path):
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_frsize * st.f_blocks


def writable_dir(path):
    if not path:
        return False
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def fingerprint(path):
    out = {"path": path, "present": False}
    if not path:
        return out
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        out["error"] = str(e)
        return out
    out["present"] = True
    try:
        out["content"] = json.loads(raw)
    except ValueError as e:
        out["error"] = "not JSON: %s" % e
    return out


def cuda_toolkit(root):
    """The CUDA toolkit the image carries, from each source that has it."""
    out = {}
    if os.environ.get("CUDA_VERSION"):
        out["env"] = os.environ["CUDA_VERSION"]
    vj = os.path.join(root, "usr/local/cuda/version.json")
    try:
        with open(vj, "rb") as f:
            doc = json.loads(f.read())
        out["version_json"] = str(doc["cuda"]["version"])
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as e:
        out["version_json_error"] = "%s: %s" % ("/usr/local/cuda/version.json", e)
    try:
        with open(os.path.join(root, "var/lib/dpkg/status"), encoding="utf-8", errors="replace") as f:
            status = f.read()
    except OSError:
        status = ""
    for para in status.split("\n\n"):
        fields = {}
        for line in para.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
        name = fields.get("Package", "")
        if re.fullmatch(r"cuda-cudart-\d+-\d+", name) and fields.get("Status", "").endswith(" installed"):
            out["cudart_deb"] = [name, fields.get("Version", "")]
            break
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fingerprint", default="")
    p.add_argument("--interpreter", default="", help="the lock's python.path, resolved here")
    p.add_argument("--root", default="/", help="where the image's file system is (tests point it at a fixture)")
    a = p.parse_args()
    names = ["TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "HF_HOME", "CUDA_CACHE_PATH"]
    env = {n: os.environ.get(n) for n in names}
    tmp = env["TMPDIR"]
    print(json.dumps({
        "probe": "env",
        "python": "%d.%d.%d" % sys.version_info[:3],
        "executable": sys.executable,
        "real_executable": os.path.realpath(sys.executable),
        "locked_interpreter": os.path.realpath(a.interpreter) if a.interpreter else "",
        "packages": installed(),
        "shm_bytes": fs_bytes("/dev/shm"),
        "tmpdir_writable": writable_dir(tmp),
        "env": env,
        "fingerprint": fingerprint(a.fingerprint),
        "cuda_toolkit": cuda_toolkit(a.root),
    }), flush=True)


if __name__ == "__main__":
    main()
