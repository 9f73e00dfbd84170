"""The one error type of the NVE code generator."""

__all__ = ["NveCompileError"]


class NveCompileError(ValueError):
    """A layer or group of output maps the code generator cannot map onto the NVE. The message
    names the layer (or group) and the limit it breaks: the image-register height, the local
    buffer, the instruction buffer or the ITERATIONS register. ``too_large``: the group's
    program or data exceed a buffer (a map can then be split into partial sums)."""

    def __init__(self, message, *, too_large=False):
        super().__init__(message)
        self.too_large = too_large
