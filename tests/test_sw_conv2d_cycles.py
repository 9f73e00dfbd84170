"""The pipeline cycle estimate that chooses the conv2d programs' row stripes."""

from dataclasses import replace

import numpy as np

from hls_ref.config import DEFAULT_CONFIG
from hls_ref.precision import Precision
from sw.conv2d_cycles import COMMAND_CYCLES, best_rows, list_cycles
from sw.fixtures import random_conv
from sw.graph import Padding
from sw.program import compiler_program
from sw.tiling.capacity import Capacity
from sw.tiling.cost import DEFAULT_COST
from sw.tiling.search import optimal_tiling
from sw.workloads.shapes import Layer

# ResNet-8's second layer: the compiler's tiles are two commands of 16 rows
LAYER = Layer("l", "conv", ("input",), (32, 32, 16), (32, 32, 16), (3, 3), (1, 1),
              Padding(1, 1, 1, 1))


def test_estimate_is_compute_plus_the_unhidden_load_and_store():
    capacity = Capacity(DEFAULT_CONFIG, "a8w8", 8)
    # one command: its load, its compute, its store, one after the other
    one = list_cycles(LAYER, capacity, 32, 16, 16)
    compute = 32 * 32 * 9 * 8 + COMMAND_CYCLES
    # a cycle per group of the store's requantizers (four: 16 channels in 4 cycles a pixel)
    assert DEFAULT_CONFIG.store_elements == 4
    store = 32 * 32 * 16 // 4
    assert compute + store < one < compute + store + 3000
    # more stripes hide all but the first load and the last store
    assert list_cycles(LAYER, capacity, 4, 16, 16) < one - store // 2
    # one requantizer: a cycle per output value
    single = Capacity(replace(DEFAULT_CONFIG, store_elements=1), "a8w8", 8)
    assert list_cycles(LAYER, single, 32, 16, 16) == one + 32 * 32 * 12


def test_best_rows_fits_and_beats_the_traffic_choice():
    capacity = Capacity(DEFAULT_CONFIG, "a8w8", 8)
    tiling = optimal_tiling(LAYER, capacity, DEFAULT_COST)
    rows = best_rows(LAYER, capacity, tiling)
    assert rows < tiling.rows
    assert (list_cycles(LAYER, capacity, rows, tiling.out_channels, tiling.in_channels)
            < list_cycles(LAYER, capacity, tiling.rows, tiling.out_channels,
                          tiling.in_channels))


def test_programs_with_chosen_stripes_are_exact():
    rng = np.random.default_rng(3)
    x, weights, qb, cmd, want = random_conv(rng, Precision.A8W8, 8, cin=6, cout=20, kernel=(3, 3),
                                            size=(12, 9), stride=(1, 1), pad=(1, 1, 1, 1))
    program, tiling = compiler_program(x, weights, qb, cmd)
    assert program.count > 2 and tiling.rows < 12
    memory, status = program.run_golden()
    assert status.done
    np.testing.assert_array_equal(program.output(memory), want)
