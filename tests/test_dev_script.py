"""dev.sh installs nothing outside .venv/ and build/ but Chromium, and that only for a test run that selects the
browser test: which pytest arguments select it, and which jobs may install it at all."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEV_SH = (ROOT / "dev.sh").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="dev.sh is a bash script")


def function(name: str) -> str:
    """The text of a shell function of dev.sh."""
    found = re.search(rf"^{name}\(\) {{\n.*?^}}\n", DEV_SH, re.S | re.M)
    assert found, f"dev.sh has no function {name}"
    return found.group(0)


def selects_the_browser_test(*args: str) -> bool:
    script = f'BROWSER_TEST=tests/viz/test_browser.py\n{function("browser_test_selected")}browser_test_selected "$@"'
    done = subprocess.run(["bash", "-c", script, "dev.sh", *args], cwd=ROOT, capture_output=True, text=True)
    assert done.stderr == ""
    return done.returncode == 0


@pytest.mark.parametrize(
    ("args", "selected"),
    [
        ((), True),  # the whole suite
        (("-x", "-q"), True),
        (("tests",), True),
        (("tests/viz",), True),
        (("tests/viz/",), True),
        (("tests/viz/test_browser.py::test_presets",), True),
        (("tests/layout", "tests/viz"), True),
        (("tests/layout",), False),
        (("-x", "tests/tools"), False),
        (("tests/viz/test_server.py",), False),
        (("-k", "layout", "tests/layout"), False),
    ],
)
def test_which_arguments_select_the_browser_test(args, selected):
    assert selects_the_browser_test(*args) is selected


def test_only_the_test_job_may_install_chromium():
    jobs = dict(re.findall(r"^  (\w+)\) (.*) ;;$", DEV_SH, re.M))
    assert set(jobs) == {"setup", "demo", "test", "lint", "format", "bench"}
    assert [job for job, line in jobs.items() if "browser" in line] == ["test"]
    assert "apt-get" not in function("setup")  # the set-up every job runs installs nothing system-wide


def test_the_install_is_announced_with_its_opt_out():
    browser = function("browser")
    announce = browser.index("say \"installing Debian's chromium system-wide")
    assert announce < browser.index("apt-get update -q")
    assert "TIRX_LAYOUT_NO_BROWSER=1" in browser[announce:] and '"${TIRX_LAYOUT_NO_BROWSER:-}"' in browser
