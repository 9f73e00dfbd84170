"""The processor: Minerva (RV32IM, from ``pythondata-cpu-minerva``) with its two Wishbone
buses and its fast interrupts (``mip`` bits 16 to 31)."""

from amaranth.hdl import Fragment, Module
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
