"""TFLite's reference kernels (LiteRT ``BUILTIN_REF``) as an independent runtime.

Used by tests and by ``tessera run --compare-litert`` to check the golden models bit for bit,
layer by layer: the interpreter is built with ``experimental_preserve_all_tensors`` so every
intermediate tensor can be read after ``invoke``.
"""

import numpy as np

from .models import model_path

__all__ = ["ReferenceRuntime"]


class ReferenceRuntime:
    """A model loaded into LiteRT with the reference kernels (not XNNPACK, not optimized)."""

    def __init__(self, model):
        """``model``: a built-in name, a ``.tflite`` path, or the bytes of a model."""
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        source = (dict(model_content=bytes(model)) if isinstance(model, bytes | bytearray)
                  else dict(model_path=str(model_path(model))))
        self.interpreter = Interpreter(
            **source,
            experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
            experimental_preserve_all_tensors=True)
        self.interpreter.allocate_tensors()
        # TFLite names need not be unique; the importer names later duplicates "name#index"
        self._by_name = {}
        for detail in self.interpreter.get_tensor_details():
            self._by_name.setdefault(detail["name"], detail["index"])
        self._input = self.interpreter.get_input_details()[0]
        self._output = self.interpreter.get_output_details()[0]

    def run(self, x):
        """Invoke on ``x``; returns the output tensor (a copy)."""
        self.interpreter.set_tensor(self._input["index"], np.asarray(x))
        self.interpreter.invoke()
        return self.interpreter.get_tensor(self._output["index"]).copy()

    def tensor(self, name):
        """An intermediate tensor of the last run, by its TFLite name."""
        base, _, index = name.partition("#")
        return self.interpreter.get_tensor(int(index) if index else self._by_name[base]).copy()
