"""The models Tessera ships, by built-in name.

The four MLPerf Tiny int8 reference models are vendored under ``models/mlperf-tiny/`` (see the
README there for their origin and licence). :func:`model_path` resolves a built-in name or a file
path; :func:`verify` checks a vendored file against its pinned digest.
"""

import hashlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BUILTIN_MODELS", "ModelFile", "model_path", "verify"]

MODELS_ROOT = Path(__file__).resolve().parent.parent / "models"


@dataclass(frozen=True)
class ModelFile:
    """A vendored model file and the SHA-256 digest it must have."""

    path: Path
    sha256: str


BUILTIN_MODELS = {
    "resnet8": ModelFile(
        MODELS_ROOT / "mlperf-tiny" / "pretrainedResnet_quant.tflite",
        "3c002613d1b2475eb51dd78dfb85a546c8ae658dee71cf6ade43b022fe205415"),
    "dscnn": ModelFile(
        MODELS_ROOT / "mlperf-tiny" / "kws_ref_model.tflite",
        "aeea436800704fce17b17292e4412630ad856e9d777c044c64ef748a880bd0ae"),
    "vww": ModelFile(
        MODELS_ROOT / "mlperf-tiny" / "vww_96_int8.tflite",
        "597a384c8c2c8a1276f04702f25013b7838f2f814f1ca7c174d295b73e3d6b7b"),
    "autoencoder": ModelFile(
        MODELS_ROOT / "mlperf-tiny" / "ad01_int8.tflite",
        "87cf24194ef93d1d9b11a591d805526b98008e351655d29883c825c9c106ba24"),
}


def model_path(name):
    """Return the path of built-in model ``name``, or of the existing file ``name``.

    Raises
    ------
    ValueError
        If ``name`` is neither a built-in name nor an existing file; the message lists the
        built-in names.
    """
    if name in BUILTIN_MODELS:
        return BUILTIN_MODELS[name].path
    path = Path(name)
    if path.is_file():
        return path
    raise ValueError(f"Unknown model {name!r}: not a file, and not one of the built-in models "
                     f"{', '.join(BUILTIN_MODELS)}")


def verify(name):
    """Return True when the vendored file of built-in model ``name`` has its pinned digest."""
    model = BUILTIN_MODELS[name]
    return hashlib.sha256(model.path.read_bytes()).hexdigest() == model.sha256
