"""imagectl verify probe: the CPU-side facts every image can report.

Prints one JSON line: the interpreter version, the installed distributions
(name, version), /dev/shm size, TMPDIR, the cache variables and the init's
fingerprint. Standard library only.
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fingerprint", default="")
    p.add_argument("--interpreter", default="", help="the lock's python.path, resolved here")
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
    }), flush=True)


if __name__ == "__main__":
    main()
