#!/usr/bin/env bash
# Set up (virtual env, dependencies, C++ build) and run one job. See README.md ("Quick start").
#   ./dev.sh demo [--listings]  the main job: the guide's layouts, then every example kernel built, assembled and
#                               simulated (one line per example module, the verdict last; --listings adds the CUDA)
#   ./dev.sh test [ARGS]        the whole test suite (ARGS go to pytest)
#   ./dev.sh lint               ruff: the linter and the formatter's check (CI runs it before the tests)
#   ./dev.sh format             ruff: format the code and apply the linter's safe fixes
#   ./dev.sh bench              the benchmarks in benchmarks/
#   ./dev.sh setup              set up only
# Everything goes into .venv/ and build/ of this checkout. The one thing installed outside them is Debian's
# chromium, for the browser test (tests/viz/test_browser.py), and only by `./dev.sh test` when that test is
# selected, run as root where apt-get exists; TIRX_LAYOUT_NO_BROWSER=1 skips it (the test then skips, saying why).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

VENV=${TIRX_LAYOUT_VENV:-.venv}
SOURCES="python tests examples benchmarks"
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
BROWSER_TEST=tests/viz/test_browser.py

say() { echo "dev.sh: $*" >&2; }

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV/ and installing the pinned dependencies and the C++ core into it (a few minutes, once)"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
  fi
  local py="$VENV/bin/python"
  # The C++ core builds against the tvm_ffi of this env, so its build requirements are installed here first and
  # the package is built without isolation, in a build folder of its own that stays incremental. The folder is keyed
  # by where this env's tvm_ffi lives: CMake's cache records that path, so a build for another env (another venv,
  # or pip's isolated `pip install .`, which builds in a temporary folder) never reuses a cache pointing elsewhere.
  "$py" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' \
    > "$VENV/build-requirements.txt"
  "$py" -m pip install --quiet -r "$VENV/build-requirements.txt" ninja
  local key
  key=$("$py" -m tvm_ffi.config --cmakedir | cksum | cut -d' ' -f1)
  "$py" -m pip install --quiet --no-build-isolation --config-settings="build-dir=build/dev-$key/{wheel_tag}" ".[test]"
  # pycute (CuTe's algebra in pure Python, a test oracle) ships in nvidia-cutlass; its own dependencies are not needed.
  "$py" -m pip install --quiet --no-deps "nvidia-cutlass==4.2.0.0"
}

# Whether pytest with these arguments runs the browser test: no paths given (the whole suite), or a path holding it.
browser_test_selected() {
  local a path given=0
  for a in "$@"; do
    path=${a%%::*}
    case "$a" in -*) continue ;; esac
    [ -e "$path" ] || continue
    given=1
    case "$(realpath "$BROWSER_TEST")/" in "$(realpath "$path")"/*) return 0 ;; esac
  done
  [ "$given" = 0 ]
}

# The browser test drives Debian's Chromium. Installed system-wide (apt-get, as root) only for a test run that
# selects that test; elsewhere, or with TIRX_LAYOUT_NO_BROWSER=1, that one test skips and says why.
browser() {
  if [ -n "${TIRX_LAYOUT_NO_BROWSER:-}" ] || command -v chromium >/dev/null 2>&1 || ! browser_test_selected "$@"; then
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "no chromium, and not root with apt-get: $BROWSER_TEST will skip (install chromium to run it)"
    return 0
  fi
  say "installing Debian's chromium system-wide (apt-get update; apt-get install chromium) for $BROWSER_TEST;"
  say "TIRX_LAYOUT_NO_BROWSER=1 skips this (and that test)"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } >/dev/null 2>&1 \
    || say "could not install chromium; $BROWSER_TEST will skip"
}

job=${1:-demo}
[ $# -gt 0 ] && shift
case "$job" in
  setup) setup ;;
  demo) setup && exec "$VENV/bin/python" -m tirx_layout.tools.demo "$@" ;;
  test) setup && browser "$@" && exec "$VENV/bin/python" -m pytest "$@" ;;
  lint) setup && "$VENV/bin/ruff" check $SOURCES && exec "$VENV/bin/ruff" format --check $SOURCES ;;
  format) setup && "$VENV/bin/ruff" check --fix $SOURCES && exec "$VENV/bin/ruff" format $SOURCES ;;
  bench) setup && for b in benchmarks/bench_*.py; do "$VENV/bin/python" "$b" "$@"; done ;;
  *) echo "usage: ./dev.sh demo|test|lint|format|bench|setup" >&2; exit 2 ;;
esac
