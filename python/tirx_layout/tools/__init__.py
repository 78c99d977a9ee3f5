"""Tools built on everything below: the ``tirx-layout`` command line (``cli``), the main job (``demo``), the
example-kernel report (``kernel_report``: build, assemble, simulate, compare), running kernels on a CUDA device
(``device``) and measurements of compiled kernels in the simulator (``measurement``).

Example: ``tirx-layout check`` from Python (``main`` takes the command line and returns the exit status): a layout
that puts two rows of elements on the same lanes is well-formed but not injective.

    >>> from tirx_layout.tools.cli import main
    >>> main(["check", "S[(2,4):(0,1@laneid)]"])
    layout       TileLayout(S[(2, 4):(0, 1@laneid)])
    well-formed  yes
    scope        ('thread', 'warp')
    injective    NO: 4 places are shared, e.g. elements 0 and 4 both at {'m': 0, 'laneid': 0}
    banks        - (not a shared-memory layout on m over a 2-D tile)
    1 problem
    1
"""
