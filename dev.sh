#!/usr/bin/env bash
# Set up (virtual env, dependencies, C++ build) and run one job. See README.md.
#   ./dev.sh demo            the main job: what the library computes for the guide's examples
#   ./dev.sh test [ARGS]     the whole test suite (ARGS go to pytest)
#   ./dev.sh lint            ruff: the linter and the formatter's check (CI runs it before the tests)
#   ./dev.sh format          ruff: format the code and apply the linter's safe fixes
#   ./dev.sh bench           the benchmarks in benchmarks/
#   ./dev.sh setup           set up only
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

VENV=${TIRX_LAYOUT_VENV:-.venv}
SOURCES="python tests examples benchmarks"
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
  fi
  local py="$VENV/bin/python"
  # The C++ core builds against the tvm_ffi of this env, so its build requirements are installed here first and
  # the package is built without isolation (the build folder under build/ then stays incremental).
  "$py" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' \
    > "$VENV/build-requirements.txt"
  "$py" -m pip install --quiet -r "$VENV/build-requirements.txt" ninja
  "$py" -m pip install --quiet --no-build-isolation ".[test]"
  # pycute (CuTe's algebra in pure Python, a test oracle) ships in nvidia-cutlass; its own dependencies are not needed.
  "$py" -m pip install --quiet --no-deps "nvidia-cutlass==4.2.0.0"
  # The visualiser's browser test drives Debian's Chromium; install it where we can (root with apt), else that
  # one test skips and says why. TIRX_LAYOUT_NO_BROWSER=1 skips it (tools/gpu_check.sh: no browser test there).
  if [ -z "${TIRX_LAYOUT_NO_BROWSER:-}" ] && ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
     && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } >/dev/null 2>&1 \
      || echo "dev.sh: could not install chromium; the browser test will be skipped" >&2
  fi
}

job=${1:-demo}
[ $# -gt 0 ] && shift
case "$job" in
  setup) setup ;;
  demo) setup && exec "$VENV/bin/python" -m tirx_layout.tools.demo "$@" ;;
  test) setup && exec "$VENV/bin/python" -m pytest "$@" ;;
  lint) setup && "$VENV/bin/ruff" check $SOURCES && exec "$VENV/bin/ruff" format --check $SOURCES ;;
  format) setup && "$VENV/bin/ruff" check --fix $SOURCES && exec "$VENV/bin/ruff" format $SOURCES ;;
  bench) setup && for b in benchmarks/bench_*.py; do "$VENV/bin/python" "$b" "$@"; done ;;
  *) echo "usage: ./dev.sh demo|test|lint|format|bench|setup" >&2; exit 2 ;;
esac
