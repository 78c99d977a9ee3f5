"""Pictures of layouts: the layout-text parser, the scene (places from ``apply_all`` and the physical grid), its
renderers (the web page, SVG, PNG, terminal tables), the bank view, the guide's presets and the local server.

Modules: ``parse`` (text -> layout, never eval), ``request`` (shape/dtype/swizzle inputs), ``scene``, ``banks``,
``presets``, ``geometry`` (scene -> boxes and text), ``svg``, ``png`` + ``font``, ``table``, ``notebook``
(``_repr_svg_``/``_repr_html_``), ``server`` + ``page.html``. The command line is ``tirx_layout.cli``.
"""
