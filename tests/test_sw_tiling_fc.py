"""The FC tiling compiler (``sw.tiling.fc``): tiles that the FC datapath accepts, the batch
that streams the weights the fewest times, errors that name the layer and the limit."""

import numpy as np
import pytest

from hls_ref.config import AcceleratorConfig, FCConfig
from hls_ref.descriptor import ErrorCode
from hls_ref.precision import Precision
from sw.fixtures import random_fc
from sw.program import fc_program
from sw.tiling.capacity import TilingError
from sw.tiling.fc import fc_tiling


def build(**fc):
    return AcceleratorConfig(conv=False, fc=FCConfig(**fc))


@pytest.mark.parametrize("precision", [Precision.A8W8, Precision.A8W4, Precision.A16W16],
                         ids=lambda p: p.label)
@pytest.mark.parametrize("shape", [(1, 640, 128), (8, 640, 128), (11, 300, 300), (3, 9, 5)],
                         ids=str)
def test_tiles_run_on_the_socket_model(precision, shape):
    """The chosen tiles make a list the golden socket model runs to its end with the layer's
    outputs, on a build with a small input PLM."""
    vectors, inputs, outputs = shape
    config = build(plm_in_words=512)
    rng = np.random.default_rng(sum(shape))
    x, w, qb, cmd, want = random_fc(rng, precision, 8, vectors=vectors, inputs=inputs,
                                    outputs=outputs)
    t = fc_tiling("layer", vectors, inputs, outputs, precision, config)
    program = fc_program(x, w, qb, cmd, config, out_splits=t.out_splits,
                         in_splits=t.in_splits, batch_splits=t.batch_splits)
    assert program.count == t.commands
    memory, status = program.run_golden()
    assert status.code == ErrorCode.NONE
    np.testing.assert_array_equal(program.output(memory)[:, 0, :], want)


def test_batches_share_the_weight_stream():
    """Eight vectors of the autoencoder's first layer: one batch of eight (the weights are
    streamed once), with inputs tiled to fit the input PLM."""
    t = fc_tiling("dense", 8, 640, 128, Precision.A8W8, build())
    assert (t.batch, t.in_tile, t.out_tile) == (8, 640, 128)
    small = fc_tiling("dense", 8, 640, 128, Precision.A8W8, build(plm_in_words=512))
    assert small.batch * -(-small.in_tile // 8) * 4 <= 512


def test_errors_name_the_layer_and_the_limit():
    with pytest.raises(TilingError, match="dense: the accelerator has no FC datapath"):
        fc_tiling("dense", 1, 10, 10, Precision.A8W8, AcceleratorConfig())
    with pytest.raises(TilingError, match="dense: the FC datapath does not implement a4w4"):
        fc_tiling("dense", 1, 10, 10, Precision.A4W4, build(precisions=("a8w8",)))
