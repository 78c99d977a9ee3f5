"""Pictures of layouts: the scene (places from ``apply_all`` and the physical grid), its renderers (the web page,
SVG, PNG, terminal tables), the bank view, the guide's presets and the local server.

Modules: ``request`` (layout text, shape, dtype and swizzle inputs), ``limits`` (how big a picture may get),
``scene``, ``banks``, ``presets``, ``geometry`` (scene -> boxes and text), ``svg``, ``png`` (Pillow), ``table``,
``notebook`` (``_repr_svg_``/``_repr_html_``, attached to the layout classes when this package is imported),
``server`` + ``page.html``. The command line is ``tirx_layout.tools.cli``.
"""

from . import notebook  # noqa: F401  (attaches the notebook display to the layout classes)
