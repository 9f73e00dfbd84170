"""The SoC's third-party gateware, imported from the pinned PyPI packages.

* ``minerva`` -- the Minerva RV32IM processor, whose Amaranth source ships in
  ``pythondata-cpu-minerva`` (under ``pythondata_cpu_minerva.data_location``);
* ``amaranth_soc`` (Wishbone, CSR registers, memory maps) and ``amaranth_stdio`` (the UART) --
  the copies vendored inside ``luna-soc`` (``luna_soc/gateware/vendor``). The PyPI packages
  of those names are empty placeholders, and ``import luna_soc`` would import the LUNA USB
  framework, so the copies are loaded directly from their files.

Each package is registered in ``sys.modules`` under its own name (Minerva imports
``amaranth_soc`` by that name), without adding anything to ``sys.path``. Minerva and the
vendored copies still use a few APIs that Amaranth 0.5 deprecates; their warnings are silenced
while they are imported and elaborated (:func:`quiet_deprecations`), nowhere else.
"""

import importlib.util
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

__all__ = ["amaranth_soc", "amaranth_stdio", "minerva", "quiet_deprecations"]


@contextmanager
def quiet_deprecations():
    """Silence ``DeprecationWarning`` (third-party code written for older Amaranth)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _package_dir(distribution, module, *parts):
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"{module} is missing: install the pinned {distribution} "
                          "(make setup)")
    return Path(spec.origin).parent.joinpath(*parts)


def _load(name, directory):
    """Import the package in ``directory`` as top-level ``name`` (once)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with quiet_deprecations():
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


_VENDOR = _package_dir("luna-soc", "luna_soc", "gateware", "vendor")
amaranth_soc = _load("amaranth_soc", _VENDOR / "amaranth_soc")
amaranth_stdio = _load("amaranth_stdio", _VENDOR / "amaranth_stdio")
with quiet_deprecations():
    importlib.import_module("amaranth_soc.wishbone")
    importlib.import_module("amaranth_soc.wishbone.sram")
    importlib.import_module("amaranth_soc.csr")
    importlib.import_module("amaranth_soc.csr.wishbone")
    importlib.import_module("amaranth_stdio.serial")

import pythondata_cpu_minerva  # noqa: E402  (after amaranth_soc, which minerva imports)

minerva = _load("minerva", Path(pythondata_cpu_minerva.data_location) / "minerva")
with quiet_deprecations():
    importlib.import_module("minerva.core")
