"""Small workloads taken directly from the seeds: FlowNetS's contracting part (seed 000) and
the three test layers of seed 002's Table 5.1."""

from .shapes import NetworkBuilder

__all__ = ["NETWORKS", "THESIS_LAYERS", "flownets", "thesis_layer"]


def flownets():
    """FlowNetS (Dosovitskiy et al. 2015), contracting part conv1 ... conv6_1 as seed 000
    tiles it: two stacked RGB frames (384 x 512 x 6), kernels 7/5/5/3, padding ``k // 2``."""
    b = NetworkBuilder("flownets", {"input": (384, 512, 6)})
    x = b.conv("conv1", "input", 64, 7, 2, 3)
    x = b.conv("conv2", x, 128, 5, 2, 2)
    x = b.conv("conv3", x, 256, 5, 2, 2)
    x = b.conv("conv3_1", x, 256, 3, 1, 1)
    x = b.conv("conv4", x, 512, 3, 2, 1)
    x = b.conv("conv4_1", x, 512, 3, 1, 1)
    x = b.conv("conv5", x, 512, 3, 2, 1)
    x = b.conv("conv5_1", x, 512, 3, 1, 1)
    x = b.conv("conv6", x, 1024, 3, 2, 1)
    b.conv("conv6_1", x, 1024, 3, 1, 1)
    return b.build("FlowNetS contracting part (seed 000's test network)",
                   "seed 000, Sec. 2.2; layer shapes from FlowNet (arXiv 1504.06852)")


# (H, W, Cin, Cout, kernel): stride 1, no padding, as in seed 002 Table 5.1
THESIS_LAYERS = {
    "average": (8, 8, 16, 4, 3),
    "mobilenet-first": (96, 96, 3, 8, 3),
    "mobilenet-last": (3, 3, 256, 256, 1),
}


def thesis_layer(name):
    """One of seed 002's Table 5.1 layers as a one-layer network."""
    h, w, cin, cout, k = THESIS_LAYERS[name]
    b = NetworkBuilder(f"thesis-{name}", {"input": (h, w, cin)})
    b.conv(name, "input", cout, k, 1, "valid")
    return b.build(f"seed 002 Table 5.1 test layer {h}x{w}x{cin}x{cout}x{k}",
                   "seed 002, Sec. 5.3, Table 5.1")


def thesis_layers():
    """The three Table 5.1 layers side by side (each reads the network input)."""
    b = NetworkBuilder("thesis-layers", {
        f"{name}-input": (h, w, cin) for name, (h, w, cin, _, _) in THESIS_LAYERS.items()})
    for name, (_, _, _, cout, k) in THESIS_LAYERS.items():
        b.conv(name, f"{name}-input", cout, k, 1, "valid")
    return b.build("seed 002 Table 5.1 test layers", "seed 002, Sec. 5.3, Table 5.1")


NETWORKS = {
    "flownets": flownets,
    "thesis-layers": thesis_layers,
}
