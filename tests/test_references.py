"""No text of the repository points at a file that is not in it: the paths that README.md, docs/, python/, tests/,
examples/ and benchmarks/ name (markdown links, backticked paths, repository paths in prose and comments, and bare
document names such as ``DECISIONS.md``) each exist in the checkout, or are made by the tools (ignored by git:
``.venv/``, ``build/``). The closing notes in docs/notes/ describe the repository of their time, so a path there may
also be one the history held; a document that was never in the repository fails everywhere.

A path is looked up from the repository root, from the package (``ops/fill/`` is ``python/tirx_layout/ops/fill/``),
from ``python/`` and from the folder of the file that names it; ``ir/device_calls.helper_name`` names a module's
attribute and needs the module. Text in fenced code blocks of markdown files is code, not a reference (README.md's
blocks are run by tests/test_readme.py).
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "tirx_layout"

if not (ROOT / ".git").exists():
    pytest.skip("not a git checkout: which files the repository holds is git's answer", allow_module_level=True)

#: The extensions of the repository's own files: a path ending in another one (``.hpp``, ``.cpp``, ``.cuh``) names a
#: file of another project (CUTLASS, a PTX page) that a facts note cites.
OWN_EXTENSIONS = ("py", "pyi", "md", "sh", "cc", "h", "toml", "png", "svg", "txt", "json", "html", "js", "css")
#: Bare document names in capitals (``SPEC.md``, ``WGMMA_DESIGN.md``) anywhere in the text, and backticked ones
#: (```decisions.md```), name files the repository must hold; ``--report sweep.md`` in a command names an output.
DOCUMENT = re.compile(r"(?<![\w.\-])([A-Z][A-Z0-9_\-]*\.md)\b")
#: A design document cited by name and section (``WGMMA_DESIGN §3``): never part of the repository, so its facts
#: have no home a reader can find. (``SPEC §2`` cites the specification; docs/decisions.md says what it is.)
DESIGN_CITATION = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_DESIGN)\b(?!\.md)")
BACKTICKED = re.compile(r"`+([^`\s]+?)`+")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s#]+)")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
PROSE_PATH = re.compile(r"(?<![\w:/.\-])[\w.\-]+/[\w.\-/]*")
PATH = re.compile(r"^(?:\.\.?/)*[\w.\-]+(?:/[\w.\-]*)*$")
EXTENSION = re.compile(rf"\.({'|'.join(OWN_EXTENSIONS)})$")
SCANNED = ("README.md", "docs/", "python/", "tests/", "examples/", "benchmarks/")
#: Records of their time: the closing notes, and the decisions log (by issue; its later sections say where files
#: moved). A path there may name a file the history held.
HISTORICAL = ("docs/notes/", "docs/decisions.md")
#: This file names dead paths on purpose (its own checks).
NOT_SCANNED = ("tests/test_references.py",)


def _git(*args: str) -> list[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()


@cache
def present() -> frozenset[str]:
    """Every file of the checkout (committed or new, not ignored) and every folder above one."""
    files = _git("ls-files", "--cached", "--others", "--exclude-standard")
    return frozenset(files) | {str(parent) for f in files for parent in PurePosixPath(f).parents if str(parent) != "."}


@cache
def in_history() -> frozenset[str]:
    """Every path any commit of the history touched, and the folders above them (empty for a shallow clone)."""
    files = [f for f in _git("log", "--all", "--name-only", "--format=") if f]
    return frozenset(files) | {str(parent) for f in files for parent in PurePosixPath(f).parents if str(parent) != "."}


def roots_of(source: str) -> list[PurePosixPath]:
    """The folders a path in ``source`` may be relative to."""
    return [
        PurePosixPath("."),
        PurePosixPath("python/tirx_layout"),
        PurePosixPath("python"),
        PurePosixPath(source).parent,
    ]


@cache
def first_components() -> frozenset[str]:
    """What a repository path starts with: a top-level entry or a folder of the package."""
    return frozenset({PurePosixPath(f).parts[0] for f in present()} | {p.name for p in PACKAGE.iterdir() if p.is_dir()})


def referenced_paths(source: str, text: str) -> set[str]:
    """The repository paths ``text`` (the file ``source``) names: markdown links; backticked paths starting with a
    top-level entry or a package folder; in prose, such paths ending in one of our extensions or in ``/``."""
    if source.endswith(".md"):
        text = FENCED.sub("", text)
    found = {m for m in MARKDOWN_LINK.findall(text) if not re.match(r"[a-z]+:", m)} if source.endswith(".md") else set()
    tops = first_components()
    quoted = {t.split("::")[0].rstrip(".,;:") for t in BACKTICKED.findall(text)}
    # A path of another project carries it before a colon (``apache/tvm:tests/python/...``): not ours.
    prose = {t.rstrip(".,;:") for t in PROSE_PATH.findall(text)}
    for token in quoted | prose:
        if not PATH.match(token) or "/" not in token.rstrip("/") or token.startswith("/"):
            continue
        start = next((p for p in PurePosixPath(token).parts if p not in ("..", ".")), "")
        foreign = re.search(r"\.[A-Za-z]+$", token) and not EXTENSION.search(token) and "/" in token  # .hpp, .cuh
        if start in tops and not foreign and (token in quoted or token.endswith("/") or EXTENSION.search(token)):
            found.add(token)
    return found


def resolves(token: str, source: str, known: frozenset[str]) -> bool:
    """Whether ``token`` (named in ``source``) is a path in ``known``, from one of its roots; a module attribute
    (``ir/device_calls.helper_name``) needs its module, an extensionless path a folder or a module."""
    token = token.rstrip("/")
    last = PurePosixPath(token).name
    stems = [token]
    if not EXTENSION.search(token) and "." in last:
        stems = [str(PurePosixPath(token).parent / last.split(".")[0])]
    for root in roots_of(source):
        for stem in stems:
            for candidate in (stem, f"{stem}.py") if not EXTENSION.search(stem) else (stem,):
                path = (ROOT / root / candidate).resolve()
                if path.is_relative_to(ROOT) and str(path.relative_to(ROOT)) in known:
                    return True
    return False


def ignored(token: str) -> bool:
    """Whether git ignores the path (made by the tools: ``.venv/``, ``build/``, ``test-artifacts/``)."""
    path = token.rstrip("/")
    return any(  # a folder pattern (``build/``) matches what lies inside the folder
        subprocess.run(["git", "check-ignore", "-q", "--no-index", p], cwd=ROOT).returncode == 0
        for p in (path, f"{path}/file")
    )


def scanned_files() -> list[str]:
    """The markdown and Python files whose references are checked."""
    return sorted(
        f
        for f in present()
        if f.startswith(SCANNED) and f.endswith((".md", ".py")) and f not in NOT_SCANNED and (ROOT / f).is_file()
    )


@cache
def shallow() -> bool:
    """Whether this is a shallow clone (its history incomplete: historical paths cannot be checked)."""
    return _git("rev-parse", "--is-shallow-repository") == ["true"]


def documents_named(source: str, text: str) -> set[str]:
    """The document names ``text`` gives: capitalised ``NAME.md`` and ``NAME_DESIGN`` anywhere, backticked
    ``name.md``."""
    if source.endswith(".md"):
        text = FENCED.sub("", text)
    quoted = {t for t in BACKTICKED.findall(text) if re.fullmatch(r"[\w\-]+\.md", t)}
    return set(DOCUMENT.findall(text)) | set(DESIGN_CITATION.findall(text)) | quoted


def dead_references() -> list[str]:
    documents = {PurePosixPath(f).name for f in present()}
    dead = []
    for source in scanned_files():
        text = (ROOT / source).read_text(encoding="utf-8", errors="replace")
        historical = source.startswith(HISTORICAL)
        for name in sorted(documents_named(source, text)):
            if name not in documents:
                dead.append(f"{source}: {name} (no such document in the repository)")
        for token in sorted(referenced_paths(source, text)):
            if resolves(token, source, present()):
                continue
            if historical and (shallow() or resolves(token, source, in_history())):
                continue
            if ignored(token):
                continue
            dead.append(f"{source}: {token}")
    return dead


def test_every_referenced_path_exists():
    dead = dead_references()
    assert dead == [], "these references point at files that are not in the repository:\n" + "\n".join(dead)


def test_the_scanner_sees_what_it_must(tmp_path):
    # Each kind of reference is found, and resolved from each root.
    text = (
        "see [the decisions](docs/decisions.md), `ops/fill/`, ``sim/wgmma.py``, `ir/device_calls.helper_name`, "
        "tests/test_architecture.py in prose, `../shared/SPEC.md`, `transform/wgmma_calls.py`"
    )
    found = referenced_paths("README.md", text)
    assert found >= {
        "docs/decisions.md",
        "ops/fill/",
        "sim/wgmma.py",
        "ir/device_calls.helper_name",
        "tests/test_architecture.py",
        "transform/wgmma_calls.py",
    }
    known = present()
    assert all(
        resolves(t, "README.md", known)
        for t in ("docs/decisions.md", "ops/fill/", "sim/wgmma.py", "ir/device_calls.helper_name")
    )
    assert not resolves("transform/wgmma_calls.py", "README.md", known)
    assert not resolves("../shared/SPEC.md", "README.md", known)
    assert ignored(".venv/bin/python") and ignored("build/") and not ignored("transform/wgmma_calls.py")
    assert documents_named(
        "x.py",
        "../shared/SPEC.md; WGMMA_DESIGN.md, MMA_DESIGN §3, `decisions.md`, not foo/bar.md, --report a.md, SPEC §2",
    ) == {"SPEC.md", "WGMMA_DESIGN.md", "MMA_DESIGN", "decisions.md"}
    # Another project's paths: its own extension, or the project before a colon.
    assert not referenced_paths("x.md", "`include/cute/arch/copy_sm100.hpp`, apache/tvm:tests/python/tirx/x.py")
