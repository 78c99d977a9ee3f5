"""The tirx-layout command line: every command, against the library's numbers, and bad input (status 2, one line)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tirx_layout import ComposeLayout, S, SwizzleLayout, TileLayout
from tirx_layout.analysis.bank_conflicts import column
from tirx_layout.tools.cli import COMMANDS, main
from tirx_layout.viz.presets import PRESETS

from kernels import EXAMPLES
from oracles.pictures import decode_png


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _table(out: str, axis: str) -> list[list[int]]:
    """The rows of an axis table with its bands of columns joined back (a band: a header row of column numbers, then
    one line per row, a blank line between bands)."""
    lines = out.splitlines()
    rows: list[list[int]] = []
    header = True
    for line in lines[lines.index(f"{axis}:") + 1 :]:
        if line.endswith(":") or line.startswith("replicas"):
            break
        if not line.strip():
            header = True
            continue
        if header:
            header, index = False, 0
            continue
        if index == len(rows):
            rows.append([])
        rows[index] += [int(v) for v in line.split()[1:]]
        index += 1
    return rows


def test_show_prints_the_swizzled_addresses_and_banks(capsys):
    status, out, err = run(capsys, "show", "S[(8,64):(64,1)]", "--swizzle", "3,3,3", "--dtype", "float16")
    assert status == 0 and err == ""
    layout = ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64) : (64, 1)]))
    assert out.splitlines()[0] == repr(layout)
    assert _table(out, "m") == [[layout.apply(i, j)["m"] for j in range(64)] for i in range(8)]
    assert [row[0] for row in _table(out, "bank (32 banks of 4 bytes, 2-byte elements)")] == [
        layout.apply(i, 0)["m"] * 2 // 4 % 32 for i in range(8)
    ]


def test_show_preset_and_shape(capsys):
    status, out, _ = run(capsys, "show", "--preset", "warp-fragment", "--shape", "16,8")
    layout = PRESETS["warp-fragment"].build()
    assert status == 0
    for axis in ("laneid", "warpid", "m"):
        assert _table(out, axis) == [[layout.apply(i, j, shape=[16, 8])[axis] for j in range(8)] for i in range(16)]
    assert "replicas: every element also at +4@warpid" in out


def test_show_list(capsys):
    status, out, _ = run(capsys, "show", "--list")
    assert status == 0 and [line.split()[0] for line in out.splitlines()] == list(PRESETS)


def test_render_svg_and_png(capsys, tmp_path):
    svg, png = tmp_path / "t.svg", tmp_path / "t.png"
    status, out, _ = run(capsys, "render", "--preset", "swizzled-fp16-128B", "-o", str(svg), "--access", "column")
    assert status == 0 and out.strip() == f"wrote {svg}"
    root = ET.parse(svg).getroot()
    banks = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("data-panel") == "banks"]
    assert len(banks) == 32
    layout = PRESETS["swizzled-fp16-128B"].build()
    lanes = column((8, 64), "float16").lanes
    touched = {layout.apply(i, j)["m"] * 2 // 4 % 32 for lane in lanes for i, j in lane}
    assert {int(r.get("data-bank")) for r in banks if r.get("fill") != "#eeeeee"} == touched
    status, _, _ = run(
        capsys, "render", "S[(32, 4):(1@TLane, 1@TCol)] + R[4:32@TLane]", "--dtype", "uint8", "-o", str(png)
    )
    assert status == 0
    pixels = decode_png(png.read_bytes())
    assert pixels.shape[2] == 3 and pixels.shape[0] > 100


def test_check_reports_a_good_layout(capsys):
    status, out, _ = run(capsys, "check", "--preset", "swizzled-fp16-128B")
    assert status == 0
    assert "injective    yes (512 elements" in out
    assert "banks        row_vectors (16 B/lane, float16): 4 wavefronts, minimum 4, conflict-free" in out
    assert out.splitlines()[-1] == "ok"


def test_check_finds_conflicts_and_problems(capsys):
    status, out, _ = run(capsys, "check", "S[(8,64):(64,1)]", "--dtype", "float16")
    assert status == 0 and "row_vectors (16 B/lane, float16): 32 wavefronts, minimum 4, 8x the minimum" in out
    status, out, _ = run(capsys, "check", "S[(2,4):(0,1@laneid)]")
    assert status == 1 and "injective    NO: 4 places are shared, e.g. elements 0 and 4" in out
    status, out, _ = run(capsys, "check", "S[(4,4):(1@laneid,1@tx)]")
    assert status == 1 and "well-formed  NO" in out
    status, out, _ = run(capsys, "check", "S[4:1] + R[2:0]")
    assert status == 1 and "replicas     NO: 4 elements" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show", "S[(8,4):(4,1]"], "tirx-layout show: error: column 13: expected ',' or ')' but found ']'"),
        (["show", "S[4:1@nope]"], "tirx-layout show: error: column 7: unknown axis 'nope'"),
        (["show"], "tirx-layout show: error: give layout text"),
        (["show", "S[4:1]", "--preset", "wg-local"], "tirx-layout show: error: give layout text or --preset"),
        (["show", "--preset", "nope"], "tirx-layout show: error: unknown preset 'nope'"),
        (["show", "S[32:1]", "--shape", "3,4"], "tirx-layout show: error: shape (3, 4) has 12 elements"),
        (["show", "S[32:1]", "--shape", "a"], "tirx-layout show: error: shape 'a' is not a list"),
        (["show", "S[32:1]", "--swizzle", "9"], "tirx-layout show: error: swizzle '9' is none, 32B"),
        (["show", "S[32:1]", "--dtype", "float4x"], "tirx-layout show: error: unknown dtype"),
        (
            ["render", "S[32:1]", "-o", "x.txt"],
            "tirx-layout render: error: the output 'x.txt' must end in .svg or .png",
        ),
        (["render", "S[32:1]"], "tirx-layout: error: the following arguments are required: -o/--output"),
        (["render", "S[32:1@laneid]", "-o", "x.svg", "--access", "column"], "--access needs a shared-memory layout"),
        (["render", "S[(8,64):(64,1)]", "-o", "/nonexistent/dir/x.svg"], "cannot write '/nonexistent/dir/x.svg'"),
        (["check", "S[0:1]"], "tirx-layout check: error: column 1: iter extent must be >= 1"),
        (["serve", "--port", "70000"], "tirx-layout serve: error: --port must be in 0..65535"),
        (["serve", "--port", "x"], "tirx-layout: error: argument --port: invalid int value: 'x'"),
        (["frobnicate"], "tirx-layout: error: argument COMMAND: invalid choice: 'frobnicate'"),
        (["show", "S[4:1]", "--bogus"], "tirx-layout: error: unrecognized arguments: --bogus"),
        (["compile", "/nonexistent/k.py"], "tirx-layout compile: error: no such file: /nonexistent/k.py"),
        (["compile", str(EXAMPLES / "warp_fragment.py"), "--target", "100"], "--target must be a CUDA architecture"),
        (["compile", str(EXAMPLES / "warp_fragment.py"), "--kernel", "nope"], "no kernel 'nope' in"),
        (["compile", str(EXAMPLES.parent / "tests" / "conftest.py")], "defines no @T.prim_func kernels"),
        (["demo", "/nonexistent/examples"], "tirx-layout demo: error: no such folder: /nonexistent/examples"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err


def test_demo_prints_the_guides_layouts(capsys):
    status, out, _ = run(capsys, "demo", "--layouts-only")
    assert status == 0
    assert "== Register fragment over lanes and warps ==" in out and "== Layout algebra ==" in out


def test_demo_runs_the_installed_examples_from_any_folder(tmp_path):
    # The wheel ships the examples; outside a checkout the main job finds them next to the package.
    done = subprocess.run(
        [_console_script(), "demo", "--layouts-only"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    folder = subprocess.run(
        [sys.executable, "-c", "from tirx_layout.tools.kernel_report import examples_directory as e; print(e())"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout.strip()
    assert Path(folder).is_absolute() and Path(folder, "tile_copies.py").is_file()


def test_compile_finds_the_installed_examples_from_any_folder(tmp_path):
    # The console script of the installed package, outside any checkout: `compile NAME` reads the shipped example.
    done = subprocess.run(
        [_console_script(), "compile", "tile_fill", "--kernel", "fill_global_with_tail", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('extern "C" __global__') and done.stderr == ""


def test_no_command_prints_help(capsys):
    status, out, _ = run(capsys)
    assert status == 2 and "show" in out and "serve" in out


@pytest.mark.parametrize("name", [None, *COMMANDS])
def test_help_everywhere(capsys, name):
    with pytest.raises(SystemExit) as info:
        main(["--help"] if name is None else [name, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tirx-layout")


def _console_script() -> str:
    script = Path(sys.executable).with_name("tirx-layout")
    assert script.exists(), "the tirx-layout console script is not installed next to this Python"
    return str(script)


def test_console_script_runs():
    done = subprocess.run(
        [_console_script(), "show", "S[(2,2):(1@laneid,1)]"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("TileLayout(S[(2, 2):(1@laneid, 1)])")
    done = subprocess.run([_console_script(), "check", "S[4:1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1


def test_serve_answers_on_loopback_and_survives_bad_requests():
    process = subprocess.Popen(
        [_console_script(), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("tirx-layout serving on http://127.0.0.1:")
        url = line.split()[3]
        page = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "<title>tirx-layout" in page
        bad = urllib.request.Request(url + "api/scene", data=json.dumps({"text": "S[4:"}).encode(), method="POST")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(bad, timeout=30)
        assert info.value.code == 400 and "column 5" in json.loads(info.value.read())["error"]
        presets = json.loads(urllib.request.urlopen(url + "api/presets", timeout=30).read())
        assert [p["name"] for p in presets] == list(PRESETS)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_compile_prints_the_kernels_cuda(capsys):
    status, out, err = run(capsys, "compile", str(EXAMPLES / "tile_copies.py"), "--kernel", "copy_wg_local_fp16_128B")
    assert status == 0 and re.fullmatch(
        r"tirx-layout compile: \[1/1\] copy_wg_local_fp16_128B built in \d+\.\d\d s\n", err
    )
    assert out.startswith('extern "C" __global__ void __launch_bounds__(128) round_trip_kernel(')
    assert "*(uint4*)(tile_ptr + " in out and "^" in out


def test_compile_every_kernel_of_a_file_and_the_whole_source(capsys):
    status, out, _ = run(capsys, "compile", str(EXAMPLES / "warp_fragment.py"), "--full")
    assert status == 0 and "#include" in out and "fragment_kernel" in out


def test_compile_reports_a_kernel_that_does_not_build(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import tirx_layout\n"
        "from tvm.script import tirx as T\n"
        "@T.prim_func\n"
        "def k(A: T.Buffer((8,), 'float32')):\n"
        "    T.device_entry()\n"
        "    tx = T.thread_id([8])\n"
        "    frag = T.alloc_local((8,), 'float32', layout=T.layout('S[8:1@laneid]'))\n"
        "    frag[tx] = A[tx]\n"
    )
    status, out, err = run(capsys, "compile", str(bad))
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert "kernel k does not build for sm_100a" in err and "T.local_view(frag)" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"tirx-layout {importlib.metadata.version('tirx_layout')}\n"


def test_compile_shows_progress_per_kernel(capsys):
    status, out, err = run(capsys, "compile", str(EXAMPLES / "tile_copies.py"))
    kernels = out.count("// ==== ")
    assert status == 0 and kernels > 1
    lines = err.splitlines()
    assert [line.split("] ")[0] for line in lines] == [
        f"tirx-layout compile: [{i}/{kernels}" for i in range(1, kernels + 1)
    ]
    assert all(re.search(r"built in \d+\.\d\d s$", line) for line in lines)
    status, out, err = run(capsys, "compile", str(EXAMPLES / "warp_fragment.py"), "--quiet")
    assert status == 0 and err == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show", "SwizzleLayout(" * 1000], "nested too deeply"),
        (["check", "ComposeLayout(" * 1000], "nested too deeply"),
        (["render", "S[2:1099511627776]", "-o", "x.svg"], "the places reach 1099511627777 positions of m"),
        (["render", "S[1:1] + R[268435456:0]", "-o", "x.png"], "268435456 places (1 elements x 268435456 replicas)"),
        (["show", "S[1:1] + R[16777216:0]"], "16777216 places"),
        (["show", "S[(128, 256):(256, 1)]"], "the tile has 32768 elements; pictures stop at 16384"),
    ],
)
def test_huge_and_deep_input_is_refused_at_once(capsys, argv, message):
    start = time.perf_counter()
    status, out, err = run(capsys, *argv)
    assert time.perf_counter() - start < 1.0
    assert status == 2 and out == "" and len(err.splitlines()) == 1 and message in err


@pytest.mark.parametrize(
    ("name", "source", "message"),
    [
        ("bad_table.py", "KERNELS = 5\n", "KERNELS in {path} must be a dict of name -> kernel, got int"),
        ("bad_entry.py", "KERNELS = {'k': 3}\n", "KERNELS['k'] in {path} must be a @T.prim_func"),
        ("bad_tuple.py", "KERNELS = {'k': ()}\n", "KERNELS['k'] in {path} must be a @T.prim_func"),
        ("bad_key.py", "KERNELS = {1: 2}\n", "KERNELS in {path} must be keyed by kernel names, got the key 1"),
        ("exits.py", "import sys\nsys.exit(3)\n", "{path} exited while loading (sys.exit(3))"),
        ("raises.py", "raise RuntimeError('boom\\nsecond line')\n", "{path} failed to load: boom"),
        ("recurses.py", "def f():\n    return f()\nf()\n", "{path} failed to load: maximum recursion depth"),
        ("kernels.txt", "KERNELS = {}\n", "{path} is not a Python file (the kernel file must end in .py)"),
        ("noext", "KERNELS = {}\n", "{path} is not a Python file"),
    ],
)
def test_compile_of_a_broken_kernel_file_is_one_line(capsys, tmp_path, name, source, message):
    path = tmp_path / name
    path.write_text(source)
    status, out, err = run(capsys, "compile", str(path))
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("tirx-layout compile: error: ") and message.format(path=path) in err


def test_a_kernel_files_exit_status_is_not_ours(tmp_path):
    path = tmp_path / "exits.py"
    path.write_text("import sys\nsys.exit(3)\n")
    done = subprocess.run([_console_script(), "compile", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "sys.exit(3)" in done.stderr


def test_a_closed_pipe_ends_quietly():
    process = subprocess.Popen(
        [_console_script(), "show", "S[(128, 128):(128, 1)]"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout.read(100).startswith(b"TileLayout(S[(128, 128):(128, 1)])")  # then stop, like `| head`
    process.stdout.close()
    status = process.wait(timeout=120)
    assert status == 141 and process.stderr.read() == b""


def test_show_picks_a_readable_shape_for_rank_3(capsys):
    status, out, _ = run(capsys, "show", "S[(2, 32, 64):(2048, 64, 1)]")
    assert status == 0 and out.splitlines()[1].startswith("shape (64, 64)")
    # A row label and at most 64 cells per table line (the default used to be one row of 2048).
    assert max(len(line.split()) for line in out.splitlines()[2:]) <= 1 + 64


def test_compile_finds_an_example_by_name_from_any_folder(capsys, tmp_path, monkeypatch):
    # After `pip install`, the examples travel inside the package: `compile tile_copies` needs no checkout.
    monkeypatch.chdir(tmp_path)
    by_path = run(capsys, "compile", str(EXAMPLES / "tile_copies.py"), "--kernel", "copy_wg_local_fp16_128B", "-q")
    for name in ("tile_copies", "tile_copies.py"):
        assert run(capsys, "compile", name, "--kernel", "copy_wg_local_fp16_128B", "-q") == by_path
    (tmp_path / "tile_copies.py").write_text("import tirx_layout\n")  # a file of that name here wins
    status, _, err = run(capsys, "compile", "tile_copies.py")
    assert status == 2 and "defines no @T.prim_func kernels" in err
    status, out, err = run(capsys, "compile", "no_such_example")
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert "no such file: no_such_example (examples by name: " in err and "tile_copies" in err
    status, _, err = run(capsys, "compile", "sub/tile_copies.py")  # a path is a path: never an example
    assert status == 2 and "no such file: sub/tile_copies.py" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["check", "--help"], "exit status: 0 when the layout has no problem, 1 when it has one"),
        (["demo", "--help"], "exit status: 0 when every kernel came out right, 1 when one did not, 2 for bad input"),
        (["--help"], "exit status: 0 done, 1 `check` found a problem or a `demo` kernel failed, 2 bad input"),
    ],
)
def test_help_says_the_exit_statuses(capsys, argv, words):
    with pytest.raises(SystemExit):
        main(argv)
    assert words in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["S[(8,64):(64,1)]", "--swizzle", "3,3,3", "--dtype", "float16"],
        ["--preset", "warp-fragment", "--shape", "2,64"],
        ["S[(4,64):(1@laneid,4@laneid)]", "--shape", "4,64"],
    ],
)
def test_show_fits_80_columns_up_to_64_columns(capsys, monkeypatch, argv):
    monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal: 80 columns
    status, out, _ = run(capsys, "show", *argv)
    assert status == 0
    first, *rest = out.splitlines()
    assert max(map(len, rest)) <= 80, max(rest, key=len)
    assert first.startswith(("TileLayout(", "ComposeLayout("))  # the layout's text, whole, as it parses back
    wide = run(capsys, "show", *argv, "--width", "0")[1]
    assert max(map(len, wide.splitlines())) > 80  # --width 0: one band per table
    narrow = run(capsys, "show", *argv, "--width", "40")[1]
    for axis in ("m", "laneid"):
        if f"{axis}:" in wide:
            assert _table(out, axis) == _table(narrow, axis) == _table(wide, axis)
