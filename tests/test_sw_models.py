"""Built-in model names resolve to the vendored, unmodified MLPerf Tiny files."""

import pytest

from sw.models import BUILTIN_MODELS, model_path, verify


@pytest.mark.parametrize("name", list(BUILTIN_MODELS))
def test_builtin_model_is_vendored_unmodified(name):
    path = model_path(name)
    assert path.is_file() and path.suffix == ".tflite"
    assert verify(name)


def test_file_paths_pass_through():
    path = BUILTIN_MODELS["dscnn"].path
    assert model_path(str(path)) == path


def test_unknown_model_names_the_builtins():
    with pytest.raises(ValueError, match=r"^Unknown model 'lenet': not a file, and not one of "
                                         r"the built-in models resnet8, dscnn, vww, autoencoder$"):
        model_path("lenet")
