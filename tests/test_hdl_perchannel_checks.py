# amaranth: UnusedElaboratable=no
"""Amaranth-simulator test of the per-channel descriptor checks against the golden model's
(``hls_ref.perchannel.check``): the fuzzer's descriptors of every mode, each with one field
replaced by any value of its width half of the time, with and without a pool's partial sums
pending. The code arrives CHECK_LATENCY cycles after the start (the checks are pipelined
around one shared multiplier)."""

from dataclasses import replace

import numpy as np
from amaranth.sim import Simulator

from hdl.perchannel.checks import CHECK_LATENCY, PerChannelChecks
from hls_ref.config import DepthwiseConfig
from hls_ref.descriptor import ErrorCode, Mode
from hls_ref.perchannel import check, geometry
from sim.descriptor_fuzz import _mutate, _perchannel_descriptor, _Regions


class _Build:
    def __init__(self, section):
        self.depthwise = section


def test_codes_equal_the_golden_checks():
    section = DepthwiseConfig(lanes=8, plm_pixels=128, acc_pixels=40, max_kernel=(3, 3),
                              max_stride=2, precisions=("a16w16", "a8w8", "a4w4"))
    rng = np.random.default_rng(7)
    cases = []
    while len(cases) < 400:
        regions = _Regions(rng, 4, 24 << 10, 24 << 10)
        prev = None
        if rng.random() < 0.2:
            drawn = _perchannel_descriptor(rng, _Build(DepthwiseConfig(lanes=8)), regions, None)
            prev = None if drawn is None else replace(drawn[0], mode=Mode.AVGPOOL)
        drawn = _perchannel_descriptor(rng, _Build(DepthwiseConfig(lanes=8)), regions, prev)
        if drawn is None:
            continue
        desc = drawn[0]
        if rng.random() < 0.5:
            desc, _ = _mutate(rng, desc)
        if rng.random() < 0.1:
            desc = replace(desc, acc_flag=1)
        pending = bool(rng.integers(2))
        cases.append((desc, pending, check(desc, section, (1, 1) if pending else None)))
    codes = {code for _, _, code in cases}
    assert {ErrorCode.NONE, ErrorCode.BAD_LAYOUT, ErrorCode.ACC_STATE,
            ErrorCode.INPUT_TOO_LARGE, ErrorCode.OUTPUT_TOO_LARGE,
            ErrorCode.BAD_PRECISION} <= codes, codes

    dut = PerChannelChecks(section)
    got = []

    async def testbench(ctx):
        for desc, pending, _ in cases:
            ctx.set(dut.desc.as_value(), int.from_bytes(desc.to_bytes(), "little"))
            ctx.set(dut.pool_pending, pending)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            for _ in range(CHECK_LATENCY - 1):
                assert not ctx.get(dut.valid)
                await ctx.tick()
            assert ctx.get(dut.valid)
            got.append((ctx.get(dut.code), ctx.get(dut.out_h), ctx.get(dut.out_w),
                        ctx.get(dut.pixels), ctx.get(dut.row_elements)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    for (desc, pending, want), (code, out_h, out_w, pixels, row) in zip(cases, got,
                                                                         strict=True):
        assert code == want, (desc, pending, ErrorCode(code), want)
        if want == ErrorCode.NONE:
            geo = geometry(desc)
            assert (out_h, out_w) == (geo.out_h, geo.out_w), desc
            assert (pixels, row) == (desc.in_h * desc.in_w, geo.out_w * desc.out_seg), desc
