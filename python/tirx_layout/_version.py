"""The package version, in one place: the wheel's metadata reads it from here (pyproject.toml), and
``tirx_layout.__version__`` and ``tirx-layout --version`` report it."""

__version__ = "0.2.0"
