# Sourced by hack/up.sh (uses its start/alive/pick_port/wait_for/http_ok and
# $cache, $wheelindex): the stand-ins for specs/pytorch.hcl's sources, on
# loopback, and their URLs appended to the env file being written ($tmp).
#
#   torch index  /usr/bin/python3 -m http.server (Debian's: hack/deps.sh) over .cache/standins/torch: plain PEP 503
#                pages and flat wheels under whl/cu118 and whl/cu124, no JSON,
#                no metadata files, no range requests
#   PyPI         bin/wheelindex serve .cache/standins/pypi (PEP 503 + 691 + 658):
#                numpy, pillow, tqdm, torch's PyPI dependencies, Debian's pip wheel
#
# IMAGECTL_BIG_WHEEL_BYTES sizes the big stand-in (nvidia-cudnn-cu12, default
# 300 MiB of incompressible bytes, made once and cached).
standins=$cache/standins
pipwhl='/usr/share/python-wheels/pip-*-py3-none-any.whl'
"$wheelindex" standins "$standins" --big-bytes "${IMAGECTL_BIG_WHEEL_BYTES:-314572800}" --copy "$pipwhl"
if alive torchindex; then
  echo "up: torch index stand-in already running on 127.0.0.1:$(cat "$cache/torchindex.port")" >&2
else
  tiport=$(pick_port torchindex 8100)
  start torchindex /usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$standins/torch" "$tiport"
  echo "$tiport" > "$cache/torchindex.port"
  wait_for torchindex 30 http_ok "http://127.0.0.1:$tiport/whl/cu124/torch/"
  echo "up: torch index stand-in ready at http://127.0.0.1:$tiport/ (whl/cu118, whl/cu124)" >&2
fi
if alive pypiindex; then
  echo "up: PyPI stand-in already running on 127.0.0.1:$(cat "$cache/pypiindex.port")" >&2
else
  ppport=$(pick_port pypiindex 8200)
  start pypiindex "$wheelindex" serve "$standins/pypi" --addr "127.0.0.1:$ppport"
  echo "$ppport" > "$cache/pypiindex.port"
  wait_for pypiindex 30 http_ok "http://127.0.0.1:$ppport/simple/numpy/"
  echo "up: PyPI stand-in ready at http://127.0.0.1:$ppport/simple/" >&2
fi
{
  printf 'export IMAGECTL_TORCH_INDEX=%q\n' "http://127.0.0.1:$(cat "$cache/torchindex.port")/"
  printf 'export IMAGECTL_PYPI_INDEX=%q\n' "http://127.0.0.1:$(cat "$cache/pypiindex.port")/simple/"
  printf 'export IMAGECTL_STANDINS_DIR=%q\n' "$standins"
} >> "$tmp"
