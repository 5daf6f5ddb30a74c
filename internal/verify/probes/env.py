"""imagectl verify probe: the CPU-side facts every image can report.

Prints one JSON line: the interpreter version, the installed distributions
(name, version), /dev/shm size, TMPDIR, the cache variables, the init's
fingerprint, the base's CUDA toolkit as the image states it three ways
(CUDA_VERSION in the environment the container got from the image config,
/usr/local/cuda/version.json, the installed cuda-cudart-X-Y deb), and the
pip guard: what PIP_CONSTRAINT pins and whether pip, in dry runs against
local stand-in wheels (no index), refuses another version of a pinned
project, would install it without the constraints, and accepts a new
project. Standard library only.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile


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


def stand_in_wheel(folder, name, version):
    """A pure wheel of name==version with no files and no requirements."""
    dist = re.sub(r"[-_.]+", "_", name)
    info = "%s-%s.dist-info" % (dist, version)
    with zipfile.ZipFile(os.path.join(folder, "%s-%s-py3-none-any.whl" % (dist, version)), "w") as z:
        z.writestr(info + "/METADATA", "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
        z.writestr(info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: imagectl-verify\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(info + "/RECORD", "")


def dry_run(folder, requirement, env):
    """pip install --dry-run of requirement from folder alone: (ok, last line of its output)."""
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", folder,
           "--no-deps", "--no-cache-dir", "--disable-pip-version-check", requirement]
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    lines = [l.strip() for l in p.stdout.decode("utf-8", "replace").splitlines() if l.strip()]
    said = [l for l in lines if l.startswith("ERROR:") or l.startswith("Would install")]
    return p.returncode == 0, (said or lines[-1:] or [""])[0][:400]


def pip_guard():
    path = os.environ.get("PIP_CONSTRAINT", "")
    out = {"constraint": path, "pins": []}
    if not path:
        return out
    try:
        with open(path, encoding="utf-8") as f:
            out["pins"] = [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]
    except OSError as e:
        out["error"] = str(e)
        return out
    pins = dict(l.split("==", 1) for l in out["pins"] if "==" in l)
    if not pins:
        return out
    target = "torch" if "torch" in pins else sorted(pins)[0]
    other = "0.0.2" if pins[target] == "0.0.1" else "0.0.1"
    folder = tempfile.mkdtemp(prefix="imagectl-pip-guard-")
    try:
        stand_in_wheel(folder, target, other)
        stand_in_wheel(folder, "imagectl-pip-guard-probe", "1.0")
        want = "%s==%s" % (target, other)
        out["tried"] = want
        ok, said = dry_run(folder, want, dict(os.environ))
        out["refused"], out["refusal"] = not ok, said
        free = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
        out["unconstrained_ok"], out["unconstrained"] = dry_run(folder, want, free)
        out["new_ok"], out["new"] = dry_run(folder, "imagectl-pip-guard-probe==1.0", dict(os.environ))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
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
        "pip_guard": pip_guard(),
    }), flush=True)


if __name__ == "__main__":
    main()
