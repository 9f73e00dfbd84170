"""The processor: Minerva (RV32IM, from ``pythondata-cpu-minerva``) with its two Wishbone
buses and its fast interrupts (``mip`` bits 16 to 31)."""

from amaranth.hdl import Cat, Fragment, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from .vendor import minerva, quiet_deprecations

__all__ = ["Cpu"]


class _DecodedDivider(wiring.Component):
    """Minerva's divider, started only by division instructions.

    The divider of the packaged Minerva starts on any instruction whose ``funct3`` is that of
    DIV, DIVU, REM or REMU -- ``andi``, ``ori``, ``xori``, shifts right, ``lbu``, ``lhu`` and
    several branches share those codes -- and holds the pipeline for its 32 cycles each time
    (the result is discarded, so programs run correctly but several times slower). This
    wrapper gives it the decoded ``divide`` flag of the instruction in the X stage as well.
    """

    def __init__(self, divider, x_stage):
        self._inner = divider
        self._x_stage = x_stage
        super().__init__(dict(divider.signature.members))

    def elaborate(self, platform):
        m = Module()
        with quiet_deprecations():
            m.submodules.inner = Fragment.get(self._inner, platform)
        inner = self._inner
        m.d.comb += [
            inner.x_op.eq(self.x_op), inner.x_src1.eq(self.x_src1),
            inner.x_src2.eq(self.x_src2), inner.x_ready.eq(self.x_ready),
            inner.x_valid.eq(self.x_valid & self._x_stage.sink.p.divide),
            self.m_result.eq(inner.m_result), self.m_busy.eq(inner.m_busy),
        ]
        return m


class _SplitMultiplier(wiring.Component):
    """Minerva's multiplier with its product split across the X and M stages.

    Minerva's own multiplier forms the whole 66-bit product of the X stage's operands in the
    X stage: the operand multiplexers, the four DSP blocks and the carry chains that sum
    their partial products in one cycle, the longest path of the ULX3S build. This one has
    the same ports and the same timing as seen by the pipeline (operands in the X stage,
    the result in ``w_result`` one M stage later): the X stage forms the four 17x17-bit
    partial products (one DSP block each) and registers them, the M stage sums them.
    """

    d_op: In(3)
    d_ready: In(1)
    x_src1: In(32)
    x_src2: In(32)
    x_ready: In(1)
    m_ready: In(1)
    w_result: Out(32)

    def elaborate(self, platform):
        m = Module()
        # D stage: the operation's flags, as Minerva's multiplier decodes them (funct3 0: MUL,
        # 1: MULH, 2: MULHSU, 3: MULHU)
        x_low, x_src1_signed, x_src2_signed = Signal(), Signal(), Signal()
        with m.If(self.d_ready):
            m.d.sync += [x_low.eq(self.d_op == 0),
                         x_src1_signed.eq((self.d_op == 1) | (self.d_op == 2)),
                         x_src2_signed.eq(self.d_op == 1)]
        # X stage: 33-bit operands (the sign bit or zero), each as a signed 17-bit high half
        # and an unsigned 16-bit low half, and their four products
        src1 = Cat(self.x_src1, x_src1_signed & self.x_src1[31])
        src2 = Cat(self.x_src2, x_src2_signed & self.x_src2[31])
        low1, high1 = src1[:16], src1[16:].as_signed()
        low2, high2 = src2[:16], src2[16:].as_signed()
        m_low = Signal()
        m_ll, m_lh = Signal(32), Signal(signed(34))
        m_hl, m_hh = Signal(signed(34)), Signal(signed(34))
        with m.If(self.x_ready):
            m.d.sync += [m_low.eq(x_low), m_ll.eq(low1 * low2), m_lh.eq(low1 * high2),
                         m_hl.eq(high1 * low2), m_hh.eq(high1 * high2)]
        # M stage: the 66-bit product
        m_prod = Signal(signed(66))
        m.d.comb += m_prod.eq(m_ll + ((m_lh + m_hl) << 16) + (m_hh << 32))
        with m.If(self.m_ready):
            m.d.sync += self.w_result.eq(m_prod[32:64])
            with m.If(m_low):
                m.d.sync += self.w_result.eq(m_prod[:32])
        return m


class Cpu(wiring.Component):
    """Minerva, with or without the multiplier and divider.

    Parameters
    ----------
    reset_address : int
        Byte address of the first instruction.
    cached : int or None
        Bytes from address 0 the processor caches (instruction and data caches,
        ``cache_bytes`` each; a power of two); None for no caches. Only the on-chip RAM is
        cached: the accelerators write external memory behind the processor's back, and
        Minerva's caches are not coherent.
    cache_bytes : int
        Bytes of each cache (two ways, 32-byte lines).
    muldiv : bool
        The multiplier and divider (RV32IM); False: RV32I (the M instructions are illegal).
        The multiplier is Minerva's with its partial products registered between the X and
        M stages (:class:`_SplitMultiplier`): the same results in the same cycles, a shorter
        longest path.

    Members
    -------
    ibus, dbus : ``Out(wishbone.Signature(addr_width=30, data_width=32, granularity=8,
    features={"err", "cti", "bte"}))``
        Instruction fetch and data buses (word addresses).
    irq : ``In(16)``
        Fast interrupt lines (level); the firmware sees them in ``mip`` bits 16 to 31.
    """

    def __init__(self, *, reset_address=0, cached=None, cache_bytes=4096, muldiv=True):
        caches = {}
        if cached is not None:
            lines = cache_bytes // (2 * 32)
            # Minerva's caches keep their bounds as word addresses, and its fetch and
            # load/store units shift those by two bits once more before matching them against
            # word addresses: a limit given four times larger selects [0, cached). (Its refills
            # also drop the address bits above the region, so the region must start at 0.)
            # tests/test_hdl_soc.py times loops inside and outside the cached region.
            caches = dict(with_icache=True, icache_nways=2, icache_nlines=lines, icache_nwords=8,
                          icache_base=0, icache_limit=4 * cached)
        with quiet_deprecations():
            self._core = minerva.core.Minerva(reset_address=reset_address, with_muldiv=muldiv,
                                              **caches)
        if muldiv:
            # Minerva's own multiplier is replaced before it is elaborated
            self._core._multiplier._MustUse__silence = True
            self._core._multiplier = _SplitMultiplier()
            self._core._divider = _DecodedDivider(self._core._divider, self._core._x)
        members = self._core.signature.members
        super().__init__({"ibus": Out(members["ibus"].signature),
                          "dbus": Out(members["dbus"].signature),
                          "irq": In(16)})

    def elaborate(self, platform):
        m = Module()
        # Minerva's source uses APIs Amaranth 0.5 deprecates: elaborate it here, quietly
        with quiet_deprecations():
            m.submodules.minerva = Fragment.get(self._core, platform)
        connect(m, flipped(self.ibus), self._core.ibus)
        connect(m, flipped(self.dbus), self._core.dbus)
        m.d.comb += self._core.fast_interrupt.eq(self.irq)
        return m
