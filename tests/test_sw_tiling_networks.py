"""Every built-in network, every layer-by-layer strategy on the default accelerator and the
fused strategy at 2 MiB: the schedule replays correctly on the golden model, or the compiler
refuses with the layer and the limit named. Long: ``make test-full``."""

import pytest

from sw.tiling.capacity import Capacity, TilingError
from sw.tiling.strategies import build_schedule
from sw.tiling.validate import validate_schedule
from sw.workloads import BUILTIN_NETWORKS, load_network

pytestmark = pytest.mark.slow

# what the default accelerator cannot run, and why (the message must say so)
REFUSED = {
    "caffepresso-imagenet": "kernel 11x11 exceeds the accelerator's maximum kernel",
    "face-detection": "reads a cropped input",
    "speed-sign": "reads a cropped input",
}
TOO_WIDE = {"mobilenetv1-1080p": "accumulator PLM banks of"}   # private PLMs only


@pytest.mark.parametrize("strategy", ["optimal", "naive", "fused"])
@pytest.mark.parametrize("name", sorted(BUILTIN_NETWORKS))
def test_every_builtin_network_validates(name, strategy):
    net = load_network(name)
    capacity = Capacity(ocm_bytes=2 << 20) if strategy == "fused" else Capacity()
    refusal = REFUSED.get(name) or (TOO_WIDE.get(name) if strategy != "fused" else None)
    if refusal:
        with pytest.raises(TilingError, match=refusal):
            build_schedule(net, strategy, capacity)
        return
    report = validate_schedule(build_schedule(net, strategy, capacity), net, seed=11)
    assert report.ok, report.summary()
