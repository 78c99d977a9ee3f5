"""Pictures of layouts: the scene (places from ``apply_all`` and the physical grid), its renderers (the web page,
SVG, PNG, terminal tables), the bank view, the guide's presets and the local server.

Modules: ``request`` (layout text, shape, dtype and swizzle inputs), ``limits`` (how big a picture may get),
``scene``, ``banks``, ``presets``, ``geometry`` (scene -> boxes and text), ``svg``, ``png`` (Pillow), ``table``,
``notebook`` (``_repr_svg_``/``_repr_html_``, attached to the layout classes when this package is imported),
``server`` + ``page.html``. The command line is ``tirx_layout.tools.cli``.

Example: the scene of a warp fragment says where each element is (thread 1 holds row 1 in its registers 0 and 1);
the geometry lays it out and a renderer draws it, as a notebook does when it shows the layout.

    >>> from tirx_layout import S, TileLayout, laneid
    >>> from tirx_layout.viz.geometry import layout_picture
    >>> from tirx_layout.viz.scene import build_scene
    >>> from tirx_layout.viz.svg import picture_svg
    >>> layout = TileLayout(S[(4, 2):(1 @ laneid, 1)])
    >>> scene = build_scene(layout, (4, 2), "float32")
    >>> [element["detail"] for element in scene["elements"][2:4]]
    ['element (1, 0) T1V0: laneid=1, m=0', 'element (1, 1) T1V1: laneid=1, m=1']
    >>> svg = picture_svg(layout_picture(scene))
    >>> svg[:64]
    '<svg xmlns="http://www.w3.org/2000/svg" width="932" height="166"'
    >>> layout._repr_svg_() == svg
    True
"""

from . import notebook  # noqa: F401  (attaches the notebook display to the layout classes)
