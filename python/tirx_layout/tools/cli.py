"""The ``tirx-layout`` command line: look at layouts from a shell.

    tirx-layout show "S[(8,64):(64,1)]" --swizzle 3,3,3 --dtype float16   tables of the places, in the terminal
    tirx-layout render "S[(32,4):(1@TLane,1@TCol)] + R[4:32@TLane]" -o sf.svg   a picture (.svg or .png)
    tirx-layout check "S[(2,4):(0,1@laneid)]"                             well-formedness, scope, injectivity, banks
    tirx-layout serve --port 8765                                         the interactive page on 127.0.0.1
    tirx-layout compile tile_copies --target sm_100a --kernel copy_wg_local_fp16_128B   the CUDA (a file, or an
                                                                          installed example by name)
    tirx-layout demo                                                      the main job, from the installed examples

Subcommands live in ``COMMANDS``: a ``Command`` is a name, a one-line help, a function that adds its arguments to
an ``argparse`` parser and a function that runs it and returns the exit status. Adding one is one entry there.
Bad input ends with status 2 and one line on stderr (``tirx-layout <command>: error: ...``); a reader that stops
early (``| head``) ends it quietly with status 141, as SIGPIPE ends other tools; ``check`` ends with 1 when the layout
has a problem, ``demo`` when a kernel came out wrong.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import tvm

from ..analysis.bank_conflicts import bank_conflicts
from ..analysis.injectivity import injectivity
from ..hw.targets import parse_arch
from ..transform import build
from ..viz.banks import PATTERNS, bank_view
from ..viz.geometry import layout_picture
from ..viz.kernel_pictures import write_layout_pictures
from ..viz.png import picture_png
from ..viz.presets import PRESETS
from ..viz.request import layout_from, parse_shape
from ..viz.scene import build_scene, check_shape
from ..viz.server import make_server
from ..viz.svg import picture_svg
from ..viz.table import layout_table
from .demo import main as run_demo
from .kernel_report import examples_directory, kernel_source

PROG = "tirx-layout"
#: The exit status of a command whose reader went away (128 + SIGPIPE, what a shell reports for other tools).
BROKEN_PIPE_STATUS = 141


class UsageError(Exception):
    """Bad input to a command: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line (argparse prints the usage block too)."""

    def error(self, message: str):
        raise UsageError(f"{message} (see {self.prog} --help)")


@dataclass(frozen=True)
class Command:
    """A subcommand: ``configure(parser)`` adds its arguments; ``run(args)`` does the work, returns the status."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    #: What ``COMMAND --help`` adds under the options: the exit statuses where they say more than 0 / 2.
    epilog: str = ""


# ---- shared arguments: which layout, over which tile ------------------------------------------------------------


def _layout_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "layout", nargs="?", help='layout text, e.g. "S[(8,64):(64,1)]" or a TileLayout/ComposeLayout repr'
    )
    parser.add_argument("--preset", help="a preset of the guide instead of layout text (see `tirx-layout show --list`)")
    parser.add_argument("--shape", help="logical shape, e.g. 8,64 (default: first shard extent x the rest)")
    parser.add_argument("--dtype", default=None, help="element type, e.g. float16 (default float32, or the preset's)")
    parser.add_argument("--swizzle", help="none, 32B, 64B, 128B, or per_element,swizzle_len,atom_len (e.g. 3,3,3)")


def _resolve(args: argparse.Namespace):
    """(layout, shape, dtype) from the shared arguments."""
    shape, dtype = parse_shape(args.shape), args.dtype
    if args.preset is not None:
        if args.layout is not None:
            raise UsageError("give layout text or --preset, not both")
        if args.preset not in PRESETS:
            raise UsageError(f"unknown preset {args.preset!r}; presets: {', '.join(PRESETS)}")
        preset = PRESETS[args.preset]
        form = preset.form()
        dtype = dtype or preset.dtype
        swizzle = args.swizzle if args.swizzle is not None else form["swizzle"]
        return layout_from(form["text"], swizzle, dtype), shape or preset.shape, dtype
    if args.layout is None:
        raise UsageError('give layout text, e.g. "S[(8,64):(64,1)]", or --preset NAME')
    dtype = dtype or "float32"
    return layout_from(args.layout, args.swizzle, dtype), shape, dtype


# ---- show ------------------------------------------------------------------------------------------------------


def _show_arguments(parser: argparse.ArgumentParser) -> None:
    _layout_arguments(parser)
    parser.add_argument("--list", action="store_true", help="list the presets and exit")
    parser.add_argument(
        "--width",
        type=int,
        help="cut tables wider than this many characters into bands of columns (default: the terminal's width, "
        "80 when it is not a terminal; 0: never cut)",
    )


def _show(args: argparse.Namespace) -> int:
    if args.list:
        for preset in PRESETS.values():
            print(f"{preset.name:22} {preset.title}")
        return 0
    width = shutil.get_terminal_size((80, 24)).columns if args.width is None else args.width
    if width < 0:
        raise UsageError(f"--width must be 0 (never cut) or a number of characters, got {width}")
    layout, shape, dtype = _resolve(args)
    print(layout_table(layout, shape, dtype, width or None))
    return 0


# ---- render ----------------------------------------------------------------------------------------------------


def _render_arguments(parser: argparse.ArgumentParser) -> None:
    _layout_arguments(parser)
    parser.add_argument("-o", "--output", required=True, help="the picture to write: a .svg or .png file")
    parser.add_argument("--access", help="add a bank view for this access pattern (row_vectors, contiguous, column)")
    parser.add_argument("--vector-bytes", type=int, default=16, help="bytes per lane for the bank view (default 16)")


def _render(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.suffix.lower() not in (".svg", ".png"):
        raise UsageError(f"the output {args.output!r} must end in .svg or .png")
    layout, shape, dtype = _resolve(args)
    scene = build_scene(layout, shape, dtype)
    banks = None
    if args.access:
        if scene["kind"] != "banks":
            raise UsageError("--access needs a shared-memory layout (every place on the axis m)")
        banks = bank_view(layout, scene["shape"], dtype, args.access, args.vector_bytes)
    picture = layout_picture(scene, banks)
    try:
        if out.suffix.lower() == ".svg":
            out.write_text(picture_svg(picture), encoding="utf-8")
        else:
            out.write_bytes(picture_png(picture))
    except OSError as err:
        raise UsageError(f"cannot write {args.output!r}: {err.strerror}") from None
    print(f"wrote {out}")
    return 0


# ---- check -----------------------------------------------------------------------------------------------------


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    _layout_arguments(parser)


def _check(args: argparse.Namespace) -> int:
    layout, shape, dtype = _resolve(args)
    shape = check_shape(layout, shape)
    problems = 0
    print(f"layout       {layout!r}")
    well_formed = layout.verify_well_formed()
    problems += not well_formed
    print(f"well-formed  {'yes' if well_formed else 'NO: the thread axes do not form one chain of levels'}")
    scope = layout.get_scope() if well_formed else None
    names = tuple(map(str, scope)) if scope else "memory only"  # level names
    print(f"scope        {names if well_formed else '-'}")
    report = injectivity(layout)
    if report.injective:
        print(f"injective    yes ({report.elements} elements, each at its own places)")
    else:
        a, b, place = report.example
        print(f"injective    NO: {report.shared_places} places are shared, e.g. elements {a} and {b} both at {place}")
        problems += 1
    if report.coinciding_replicas:
        print(f"replicas     NO: {report.coinciding_replicas} elements have replicas at the same place")
        problems += 1
    places = layout.apply(0)
    if set(places) == {"m"} and len(shape) == 2:
        for name, make in PATTERNS.items():
            try:
                access = make(shape, dtype, 16)
            except ValueError as err:
                print(f"banks        {name}: does not fit this tile ({err})")
                continue
            bank = bank_conflicts(layout, dtype, access)
            verdict = "conflict-free" if bank.conflict_free else f"{bank.wavefronts / bank.minimum:g}x the minimum"
            print(
                f"banks        {name} ({access.vector_bytes} B/lane, {dtype}): {bank.wavefronts} wavefronts, "
                f"minimum {bank.minimum}, {verdict}"
            )
    else:
        print("banks        - (not a shared-memory layout on m over a 2-D tile)")
    print("ok" if not problems else f"{problems} problem{'s' if problems > 1 else ''}")
    return 0 if not problems else 1


# ---- serve -----------------------------------------------------------------------------------------------------


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0 picks a free one)")


def _serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be in 0..65535, got {args.port}")
    try:
        server = make_server(args.port)
    except OSError as err:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {err.strerror}") from None
    print(f"{PROG} serving on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


# ---- compile ---------------------------------------------------------------------------------------------------


def _compile_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "kernel_file",
        help="a Python file defining TVMScript kernels (module-level @T.prim_func objects, or a KERNELS dict as in "
        "examples/), or the name of an example installed with the package (e.g. tile_copies)",
    )
    parser.add_argument("--target", default="sm_100a", help="CUDA architecture (default sm_100a)")
    parser.add_argument("--kernel", help="compile only this kernel (default: every kernel in the file)")
    parser.add_argument("--full", action="store_true", help="print the whole CUDA file, not just the kernels")
    parser.add_argument(
        "--show-layouts",
        metavar="DIR",
        help="also write a picture (DIR/<kernel>.<buffer>.svg) of every buffer's layout after layout inference",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress lines on stderr (kernel i of n, build time)"
    )


def _kernel_of(path: Path, table: Mapping, name: str):
    """The PrimFunc of ``KERNELS[name]``: the function itself or a tuple whose first item is it (an example's table
    makes its kernels when first looked up, so this is where a broken entry shows)."""
    try:
        entry = table[name]
    except SystemExit as err:
        raise UsageError(f"KERNELS[{name!r}] in {path} exited (sys.exit({err.code!r}))") from None
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UsageError(f"KERNELS[{name!r}] in {path} failed: {first}") from None
    kernel = entry[0] if isinstance(entry, tuple) and entry else entry
    if not isinstance(kernel, tvm.tirx.PrimFunc):
        raise UsageError(
            f"KERNELS[{name!r}] in {path} must be a @T.prim_func or a tuple starting with one, "
            f"got {type(entry).__name__}"
        )
    return kernel


def example_names() -> list[str]:
    """The example kernel files installed with the package, by name (what ``tirx-layout compile NAME`` finds).

    Example:
        >>> "tile_copies" in example_names()
        True
    """
    return sorted(p.stem for p in examples_directory().glob("*.py"))


def kernel_file(given: str) -> Path:
    """The kernel file ``tirx-layout compile`` reads: the file ``given`` names, else (a bare name such as
    ``tile_copies`` or ``tile_copies.py``, no such file here) the installed example of that name.

    Example:
        >>> kernel_file("tile_copies").name
        'tile_copies.py'
    """
    path = Path(given)
    if path.is_file() or path.parent != Path("."):
        return path
    example = examples_directory() / f"{path.stem}.py"
    return example if path.suffix in ("", ".py") and example.is_file() else path


def _kernels_in(path: Path) -> dict[str, Callable[[], object]]:
    """The kernels of a file by name, each as a function that returns it (``KERNELS`` entries are made lazily)."""
    if not path.is_file():
        raise UsageError(f"no such file: {path} (examples by name: {', '.join(example_names())})")
    if path.suffix != ".py":
        raise UsageError(f"{path} is not a Python file (the kernel file must end in .py)")
    name = f"tirx_layout_cli_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    try:
        loader.exec_module(module)
    except SystemExit as err:  # the file's own exit status is not ours
        raise UsageError(f"{path} exited while loading (sys.exit({err.code!r}))") from None
    except RecursionError:
        raise UsageError(f"{path} failed to load: maximum recursion depth exceeded") from None
    except Exception as err:  # the user's file: any error it raises is bad input here
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UsageError(f"{path} failed to load: {first}") from None
    kernels = {
        name: (lambda value=value: value)
        for name, value in vars(module).items()
        if isinstance(value, tvm.tirx.PrimFunc)
    }
    table = getattr(module, "KERNELS", {})
    if not isinstance(table, Mapping):
        raise UsageError(f"KERNELS in {path} must be a dict of name -> kernel, got {type(table).__name__}")
    for name in table:
        if not isinstance(name, str):
            raise UsageError(f"KERNELS in {path} must be keyed by kernel names, got the key {name!r}")
        kernels[name] = lambda name=name: _kernel_of(path, table, name)
    return kernels


def _compile(args: argparse.Namespace) -> int:
    try:
        parse_arch(args.target)
    except ValueError as err:
        raise UsageError(f"--target must be a CUDA architecture like sm_100a: {err}") from None
    kernels = _kernels_in(kernel_file(args.kernel_file))
    if not kernels:
        raise UsageError(f"{args.kernel_file} defines no @T.prim_func kernels")
    if args.kernel is not None:
        if args.kernel not in kernels:
            raise UsageError(f"no kernel {args.kernel!r} in {args.kernel_file}; it has {', '.join(kernels)}")
        kernels = {args.kernel: kernels[args.kernel]}
    for index, (name, kernel_of) in enumerate(kernels.items(), start=1):
        start = time.perf_counter()
        kernel = kernel_of()
        try:
            cuda = build(kernel, args.target).imports[0].inspect_source()
        except Exception as err:  # TVM's build errors carry long traces; the first line says what went wrong
            # (our errors put the buffer and the TVMScript line, in the kernel file, on that first line)
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise UsageError(f"kernel {name} does not build for {args.target}: {type(err).__name__}: {first}") from None
        if len(kernels) > 1:
            print(f"// ==== {name} ====")
        print(cuda if args.full else kernel_source(cuda), flush=True)
        if args.show_layouts:
            try:
                written = write_layout_pictures(kernel, args.show_layouts, f"{name}.")
            except OSError as err:
                raise UsageError(f"cannot write pictures to {args.show_layouts!r}: {err.strerror}") from None
            plural = "s" if len(written) != 1 else ""
            print(f"// {name}: {len(written)} layout picture{plural} in {args.show_layouts}", file=sys.stderr)
        if not args.quiet:
            seconds = time.perf_counter() - start
            print(
                f"{PROG} compile: [{index}/{len(kernels)}] {name} built in {seconds:.2f} s", file=sys.stderr, flush=True
            )
    return 0


# ---- demo ------------------------------------------------------------------------------------------------------


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "examples", nargs="?", help="a folder of example kernel files (default: the installed examples)"
    )
    parser.add_argument("--layouts-only", action="store_true", help="skip the kernels; print the guide's layouts")
    parser.add_argument(
        "--listings", action="store_true", help="also print the CUDA lines of each example module's showcase kernels"
    )


def _demo(args: argparse.Namespace) -> int:
    if args.examples is not None and not Path(args.examples).is_dir():
        raise UsageError(f"no such folder: {args.examples}")
    flags = [flag for flag, on in (("--layouts-only", args.layouts_only), ("--listings", args.listings)) if on]
    return run_demo([*([args.examples] if args.examples else []), *flags])


#: The subcommands, in the order --help lists them. To add one, append a Command.
COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("show", "print a layout's places as tables", _show_arguments, _show),
        Command("render", "draw a layout to an SVG or PNG file", _render_arguments, _render),
        Command(
            "check",
            "check well-formedness, scope, injectivity and bank conflicts",
            _check_arguments,
            _check,
            "exit status: 0 when the layout has no problem, 1 when it has one (not well-formed, not injective, or "
            "replicas at one place; bank conflicts are reported, not counted as problems), 2 for bad input",
        ),
        Command("serve", "serve the interactive layout page on 127.0.0.1", _serve_arguments, _serve),
        Command(
            "compile",
            "build a TVMScript kernel file for a CUDA architecture and print the CUDA",
            _compile_arguments,
            _compile,
        ),
        Command(
            "demo",
            "the main job: the guide's layouts, then every example kernel built, assembled and simulated",
            _demo_arguments,
            _demo,
            "exit status: 0 when every kernel came out right, 1 when one did not, 2 for bad input",
        ),
    )
}


def package_version() -> str:
    """The installed package's version (``tirx_layout.__version__`` where the package defines it).

    Example:
        >>> package_version() == importlib.metadata.version("tirx_layout")
        True
    """
    # The facade is above this layer, so it is read from sys.modules (importing tools imported it) rather than imported.
    version = getattr(sys.modules.get("tirx_layout"), "__version__", None)
    return str(version) if version else importlib.metadata.version("tirx_layout")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command of ``COMMANDS``.

    Example:
        >>> build_parser().parse_args(["show", "S[4:1]"]).command
        'show'
    """
    parser = _Parser(
        prog=PROG,
        description="Look at tirx_layout layouts: tables, pictures, checks, a local page.",
        epilog="exit status: 0 done, 1 `check` found a problem or a `demo` kernel failed, 2 bad input (one line on "
        "stderr), 141 the reader of the output went away",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for c in COMMANDS.values():
        c.configure(commands.add_parser(c.name, help=c.help, description=c.help, epilog=c.epilog or None))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tirx-layout`` with ``argv`` (default: the process arguments); returns the exit status.

    Example:
        >>> main(["show", "S[(2, 2):(1@laneid, 1)]"])
        TileLayout(S[(2, 2):(1@laneid, 1)])
        shape (2, 2)  dtype float32  size 4  span 2  scope ('thread', 'warp')
        cells (T = CTA thread (the thread axes combined), V = value (register slot m)):
               0    1
          0 T0V0 T0V1
          1 T1V0 T1V1
        laneid:
               0 1
            0  0 0
            1  1 1
        m:
               0 1
            0  0 1
            1  0 1
        0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = None

    def fail(message: str) -> int:
        where = f"{PROG} {args.command}" if args is not None and args.command else PROG
        print(f"{where}: error: {message}", file=sys.stderr)
        return 2

    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        status = COMMANDS[args.command].run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        return status
    except BrokenPipeError:
        # The reader stopped (`| head`): end quietly; stdout goes to /dev/null so the final flush says nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_STATUS
    except UsageError as err:
        return fail(str(err))
    except RecursionError:
        return fail("the input is nested too deeply")
    except MemoryError:
        return fail("out of memory (the layout is too large; slice it first)")
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as err:
        # Library errors name the offending value; one line is all a shell user needs.
        message = str(err)[1:-1] if isinstance(err, KeyError) else str(err)
        return fail(message.splitlines()[0] if message.strip() else type(err).__name__)


if __name__ == "__main__":
    sys.exit(main())
