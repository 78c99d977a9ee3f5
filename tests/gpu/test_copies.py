"""The copy examples on a real GPU: every swizzled-staging, tile-copy (all dtypes x swizzles x fragments), replica,
inferred-layout, symbolic-extent and narrow-dtype kernel of ``examples/``, built for the device's architecture and
run through the TVM runtime. Outputs start as a sentinel (NaN, or an extreme integer), so an element the kernel
never writes fails the comparison with numpy; a second build turns every store to an output into ``atomicAdd(&e,
1)`` (``kernels.device.count_stores``), so each element then says how many times the kernel wrote it: exactly once.
"""

import numpy as np
import pytest

from tirx_layout.tools.device import device_arch, launch, matches

from kernels.device import (
    COPY_MODULES,
    COUNTABLE,
    count_stores,
    device_case,
    example_entries,
    example_entry,
    requires_gpu,
)

pytestmark = requires_gpu

COPIES = example_entries(COPY_MODULES)


@pytest.mark.parametrize(("stem", "name"), COPIES, ids=[name for _, name in COPIES])
def test_the_kernel_on_the_device_equals_numpy(stem, name):
    kernel, arrays, wanted, check = device_case(example_entry(stem, name))
    outputs = launch(kernel, arrays, device_arch())
    for output, value in wanted.items():
        assert matches(outputs[output], value, check.rtol, check.atol), (output, outputs[output], value)


@pytest.mark.parametrize(("stem", "name"), COPIES, ids=[name for _, name in COPIES])
def test_the_kernel_on_the_device_writes_every_output_element_once(stem, name):
    kernel, arrays, wanted, _check = device_case(example_entry(stem, name))
    params = {p.name: p for p in kernel.params}
    uncountable = [n for n in wanted if str(params[n].dtype) not in COUNTABLE]
    if uncountable:
        pytest.skip(f"CUDA has no atomicAdd for {params[uncountable[0]].dtype} (output {uncountable[0]})")
    for output in wanted:
        arrays[output] = np.zeros_like(arrays[output])
    arch = device_arch()
    counts = launch(kernel, arrays, arch, module=count_stores(kernel, arch))
    for output in wanted:
        written = counts[output].astype(np.float64)
        assert (written == 1).all(), f"{output}: elements written {sorted(set(written.ravel().tolist()))} times"
