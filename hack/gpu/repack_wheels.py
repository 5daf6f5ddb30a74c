"""Repack an installed Python environment's distributions as wheels and lay
them out as a PEP 503 simple index (a test fixture for the GPU machine run:
the only torch that exists there is the one installed in /opt/torch/.venv).

    python3 repack_wheels.py --out DIR [--index-path whl/cu130] REQ... [--periphery NAME==VER]...

Run it with the environment's own interpreter. It takes the closure of REQ
(torch) through Requires-Dist, extras included (torch 2.11 brings its CUDA
libraries through cuda-toolkit[...] extras, so a closure that skips extras
misses libcudart), evaluating markers for this interpreter. Each distribution
becomes a stored (uncompressed) wheel built from its RECORD: entries outside
site-packages (../../bin console scripts) and installer files (INSTALLER,
REQUESTED, direct_url.json) stay out, file modes are kept (executables such
as triton's ptxas must stay executable), RECORD is rewritten with fresh hashes,
and the file name takes the compressed tag set of the WHEEL file's Tag lines
(py2.py3-none-any). Like the PyTorch index, each wheel's METADATA is served
beside it (PEP 658, data-core-metadata). --periphery adds a small pure-Python
wheel NAME==VER made here (the fast-moving package of the periphery-only
update benchmark).

Prints one JSON line: wheels, bytes, seconds.
"""
import argparse
import base64
import hashlib
import html
import importlib.metadata as md
import json
import os
import re
import sys
import time
import zipfile

try:
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pip vendors it
    from pip._vendor.packaging.markers import default_environment
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name


def closure(roots):
    env = default_environment()
    dists = {canonicalize_name(d.metadata["Name"]): d for d in md.distributions()}
    done, order = {}, []  # name -> extras handled ("" is the base requirements)
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        n = canonicalize_name(req.name)
        if n not in dists:
            raise SystemExit("repack: %s is required but not installed" % req)
        new = ({""} | set(req.extras)) - done.get(n, set())
        if not new:
            continue
        if n not in done:
            order.append(n)
        done.setdefault(n, set()).update(new)
        for r in dists[n].requires or []:
            rr = Requirement(r)
            if rr.marker is None:
                if "" in new:
                    todo.append(rr)
            elif any(rr.marker.evaluate(dict(env, extra=e)) for e in new):
                todo.append(rr)
    return [dists[n] for n in order]


def b64(d):
    return base64.urlsafe_b64encode(d).rstrip(b"=").decode()


def compressed_tag(tags):
    py, abi, plat = [], [], []
    for t in tags:
        a, b, c = t.split("-", 2)
        for lst, v in ((py, a), (abi, b), (plat, c)):
            if v not in lst:
                lst.append(v)
    return "-".join(".".join(sorted(x)) for x in (py, abi, plat))


SKIP = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def repack(dist, out):
    files = [f for f in (dist.files or []) if not str(f).startswith("..")]
    info = next(str(f).split("/")[0] for f in files if str(f).endswith(".dist-info/METADATA"))
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = [l.split(":", 1)[1].strip() for l in wheel_meta.splitlines() if l.startswith("Tag:")]
    if not tags:
        raise SystemExit("repack: %s has no Tag in WHEEL" % dist.metadata["Name"])
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    fname = "%s-%s-%s.whl" % (name, dist.version, compressed_tag(tags))
    path = os.path.join(out, fname)
    record = []
    size = 0
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for f in files:
            rel = str(f)
            base = rel.split("/")[-1]
            if rel.startswith(info + "/") and base in SKIP:
                continue
            src = f.locate()
            if not os.path.isfile(src) or "__pycache__" in rel:
                continue
            data = open(src, "rb").read()
            zi = zipfile.ZipInfo(rel, date_time=(2026, 1, 1, 0, 0, 0))
            # Keep the mode: pip makes a file executable when the zip entry
            # is (triton's ptxas, which torch.compile runs, is one).
            zi.external_attr = (os.stat(src).st_mode & 0xFFFF) << 16
            z.writestr(zi, data)
            record.append("%s,sha256=%s,%d" % (rel, b64(hashlib.sha256(data).digest()), len(data)))
            size += len(data)
        record.append(info + "/RECORD,,")
        z.writestr(zipfile.ZipInfo(info + "/RECORD", date_time=(2026, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    os.replace(path + ".tmp", path)
    return fname, dist.metadata["Name"], dist.read_text("METADATA"), size


def periphery(spec, out):
    n, v = spec.split("==")
    mod = re.sub(r"[-.]+", "_", n).lower()
    info = "%s-%s.dist-info" % (mod, v)
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: imagectl GPU run periphery fixture\n" % (n, v)
    files = {
        mod + "/__init__.py": '__version__ = "%s"\n' % v,
        info + "/METADATA": meta,
        info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: imagectl-repack\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    fname = "%s-%s-py3-none-any.whl" % (mod, v)
    rec = ["%s,sha256=%s,%d" % (k, b64(hashlib.sha256(c.encode()).digest()), len(c)) for k, c in files.items()]
    files[info + "/RECORD"] = "\n".join(rec + [info + "/RECORD,,"]) + "\n"
    with zipfile.ZipFile(os.path.join(out, fname), "w", zipfile.ZIP_DEFLATED) as z:
        for k, c in files.items():
            z.writestr(zipfile.ZipInfo(k, date_time=(2026, 1, 1, 0, 0, 0)), c)
    return fname, n, meta, 0


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_index(root, index_path, entries):
    files = os.path.join(root, "files")
    projects = {}
    for fname, pname, _meta in entries:
        projects.setdefault(canonicalize_name(pname), []).append(fname)
    idx = os.path.join(root, index_path)
    os.makedirs(idx, exist_ok=True)
    depth = "../" * (index_path.strip("/").count("/") + 2)
    for p, fs in projects.items():
        d = os.path.join(idx, p)
        os.makedirs(d, exist_ok=True)
        links = []
        for f in sorted(set(fs)):
            fp = os.path.join(files, f)
            h = sha256(fp)
            m = fp + ".metadata"
            core = ' data-core-metadata="sha256=%s" data-dist-info-metadata="sha256=%s"' % ((sha256(m),) * 2) if os.path.exists(m) else ""
            links.append('<a href="%sfiles/%s#sha256=%s"%s>%s</a><br>' % (depth, html.escape(f), h, core, html.escape(f)))
        with open(os.path.join(d, "index.html"), "w") as o:
            o.write("<!DOCTYPE html><html><body>\n%s\n</body></html>\n" % "\n".join(links))
    with open(os.path.join(idx, "index.html"), "w") as o:
        o.write("<!DOCTYPE html><html><body>\n%s\n</body></html>\n" % "\n".join(
            '<a href="%s/">%s</a><br>' % (p, p) for p in sorted(projects)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--index-path", default="whl/cu130")
    ap.add_argument("--periphery", action="append", default=[])
    ap.add_argument("--only-periphery", action="store_true", help="add the periphery wheels to an existing index")
    ap.add_argument("reqs", nargs="*")
    a = ap.parse_args()
    t = time.time()
    files = os.path.join(a.out, "files")
    os.makedirs(files, exist_ok=True)
    entries, total = [], 0
    state = os.path.join(a.out, "entries.json")
    if a.only_periphery and os.path.exists(state):
        entries = [tuple(e) for e in json.load(open(state))]
    if not a.only_periphery:
        for d in closure(a.reqs):
            fname, pname, meta, size = repack(d, files)
            open(os.path.join(files, fname + ".metadata"), "w").write(meta)
            entries.append((fname, pname, ""))
            total += size
    for p in a.periphery:
        fname, pname, meta, _ = periphery(p, files)
        open(os.path.join(files, fname + ".metadata"), "w").write(meta)
        entries.append((fname, pname, ""))
    json.dump(entries, open(state, "w"))
    write_index(a.out, a.index_path, entries)
    print(json.dumps({"repack": True, "wheels": len(entries), "bytes": total, "seconds": round(time.time() - t, 1)}))


if __name__ == "__main__":
    sys.exit(main())
