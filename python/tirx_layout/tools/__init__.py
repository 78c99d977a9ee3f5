"""Tools built on everything below: the ``tirx-layout`` command line (``cli``), the main job (``demo``), the
example-kernel report (``kernel_report``: build, assemble, simulate, compare) and measurements of compiled kernels
in the simulator (``measurement``)."""
