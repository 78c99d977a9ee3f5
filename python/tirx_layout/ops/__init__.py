"""The tile ops: what each op of our TIR is and how it lowers; ``helpers``: the device helpers their lowerings
emit, by family (``mbarrier``, ``tma``, ``sync``, ``tcgen05``, ``wgmma``)."""
