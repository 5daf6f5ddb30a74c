#!/usr/bin/env python3
"""The few curl options hack/k8s.sh and hack/gpu/k8s-e2e.sh use, for a
machine without curl (the GPU machine's Ubuntu may lack it):

    curl.py [-fsS] [--max-time S] [--cacert F] [--cert F] [--key F]
            [-X METHOD] [-H 'Name: value']... [--data-binary @FILE] URL

The response body goes to stdout. Exit 22 on an HTTP status >= 400 with -f
(curl's code), 28 on a timeout, 7 when the connection fails.
"""
import socket
import ssl
import sys
import urllib.error
import urllib.request


def main(argv):
    opts = {"max-time": None, "cacert": None, "cert": None, "key": None, "data-binary": None}
    method = None
    headers = {}
    fail = quiet = show = False
    url = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and a[2:] in opts:
            if i + 1 >= len(argv):
                print("curl.py: %s needs a value" % a, file=sys.stderr)
                return 2
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        if a in ("-X", "-H"):
            if i + 1 >= len(argv):
                print("curl.py: %s needs a value" % a, file=sys.stderr)
                return 2
            if a == "-X":
                method = argv[i + 1]
            else:
                k, _, v = argv[i + 1].partition(":")
                headers[k.strip()] = v.strip()
            i += 2
            continue
        if a.startswith("-") and not a.startswith("--") and len(a) > 1 and set(a[1:]) <= set("fsS"):
            fail = fail or "f" in a
            quiet = quiet or "s" in a
            show = show or "S" in a
        elif a.startswith("-"):
            print("curl.py: unsupported option %s" % a, file=sys.stderr)
            return 2
        else:
            url = a
        i += 1
    if url is None:
        print("curl.py: no URL", file=sys.stderr)
        return 2
    loud = show or not quiet
    ctx = None
    if url.startswith("https:"):
        ctx = ssl.create_default_context(cafile=opts["cacert"])
        if opts["cert"]:
            ctx.load_cert_chain(opts["cert"], opts["key"])
    timeout = float(opts["max-time"]) if opts["max-time"] else None
    data = None
    if opts["data-binary"] is not None:
        d = opts["data-binary"]
        if d.startswith("@"):
            with open(d[1:], "rb") as f:
                data = f.read()
        else:
            data = d.encode()
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            sys.stdout.buffer.write(r.read())
    except urllib.error.HTTPError as e:
        if not fail:
            sys.stdout.buffer.write(e.read())
            return 0
        if loud:
            print("curl: (22) The requested URL returned error: %d (%s)" % (e.code, url), file=sys.stderr)
        return 22
    except (socket.timeout, TimeoutError) as e:
        if loud:
            print("curl: (28) %s: %s" % (url, e), file=sys.stderr)
        return 28
    except (urllib.error.URLError, OSError) as e:
        if loud:
            print("curl: (7) %s: %s" % (url, getattr(e, "reason", e)), file=sys.stderr)
        return 7
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
