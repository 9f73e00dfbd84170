"""cocotb testbench of the AXI4-Lite register bank: cocotbext-axi's AXI-Lite master with random
pauses on all five channels drives random register traffic, checked against a Python model of
the register map (RW with random strobes, W1P pulses, W1C set and clear, RO inputs driven by the
testbench, unmapped offsets)."""

import logging
import random
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from hdl.csr import port_name
from hls_ref.registers import Access
from sim.runner import Design

# cocotbext-axi 0.1.28 still calls cocotb 1.x APIs that cocotb 2 deprecates; the tests run with
# warnings as errors, so ignore those (and only those) raised from its own code.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi\.")


class RegisterModel:
    """The values reads of the bank return, kept in step with the traffic sent to it."""

    def __init__(self, regmap):
        self.regmap = regmap
        self.by_offset = {register.offset: register for register in regmap}
        self.state = {}
        for register in regmap:
            for field in register.fields:
                if field.access is not Access.CONST:
                    self.state[register.name, field.name] = (
                        field.reset if field.access is Access.RW else 0)
        #: ``(register, field, value)`` of every W1P pulse the writes should have produced.
        self.pulses = []

    def fields(self, *accesses):
        return [(register, field) for register in self.regmap for field in register.fields
                if field.access in accesses]

    def read(self, address):
        """Return ``(value, mapped)`` for a read of byte ``address``."""
        register = self.by_offset.get(address & ~3)
        if register is None:
            return 0, False
        value = 0
        for field in register.fields:
            if field.access is Access.CONST:
                value |= field.value << field.lsb
            elif field.access is not Access.W1P:
                value |= self.state[register.name, field.name] << field.lsb
        return value, True

    def write(self, address, data, strb, *, held_sets=()):
        """Apply a write; ``held_sets`` are ``(register, field, bits)`` whose set inputs are
        high while it lands (the set wins). Return whether the offset is mapped."""
        register = self.by_offset.get(address & ~3)
        if register is None:
            return False
        strobed = sum(0xFF << 8 * byte for byte in range(4) if strb >> byte & 1)
        for field in register.fields:
            key = (register.name, field.name)
            ones = (data & strobed) >> field.lsb & ((1 << field.width) - 1)
            mask = strobed >> field.lsb & ((1 << field.width) - 1)
            if field.access is Access.RW:
                self.state[key] = (self.state[key] & ~mask) | ones
            elif field.access is Access.W1P and ones:
                self.pulses.append((*key, ones))
            elif field.access is Access.W1C:
                self.state[key] &= ~ones
        for name, field_name, bits in held_sets:
            self.state[name, field_name] |= bits
        return True


def _pauses(rng, probability):
    """An endless random pause pattern for a cocotbext-axi channel."""
    while True:
        yield rng.random() < probability


class TB:
    """The bank, its AXI-Lite master, the model and a monitor of the W1P outputs."""

    def __init__(self, dut, seed):
        self.dut = dut
        self.rng = random.Random(seed)
        component = Design.from_env().build()
        self.model = RegisterModel(component.regmap)
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "bus", bus_separator="__"),
                                    dut.clk, dut.rst)
        for interface in (self.master.write_if, self.master.read_if):
            interface.log.setLevel(logging.WARNING)
        self.pulses = []
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    def port(self, register, field, suffix=""):
        return getattr(self.dut, port_name(register.name, field.name) + suffix)

    async def reset(self):
        for register, field in self.model.fields(Access.RO):
            self.port(register, field).value = 0
        for register, field in self.model.fields(Access.W1C):
            self.port(register, field, "_set").value = 0
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 3)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        cocotb.start_soon(self._watch_pulses())

    def pause(self, probability):
        """Pause each channel of the master randomly (``probability`` per cycle): address and
        data channels stay idle, the response channels apply back-pressure."""
        write, read = self.master.write_if, self.master.read_if
        for channel in (write.aw_channel, write.w_channel, write.b_channel, read.ar_channel,
                        read.r_channel):
            channel.set_pause_generator(_pauses(random.Random(self.rng.random()), probability))

    async def _watch_pulses(self):
        ports = [(register, field, self.port(register, field))
                 for register, field in self.model.fields(Access.W1P)]
        while True:
            await FallingEdge(self.dut.clk)
            for register, field, port in ports:
                value = int(port.value)
                if value:
                    self.pulses.append((register.name, field.name, value))

    async def write(self, address, data, strb, **kwargs):
        """Write the strobed bytes of ``data`` (contiguous) at word ``address`` and check the
        response against the model."""
        first = (strb & -strb).bit_length() - 1
        count = strb.bit_length() - first
        payload = ((data >> 8 * first) & ((1 << 8 * count) - 1)).to_bytes(count, "little")
        response = await self.master.write(address + first, payload)
        mapped = self.model.write(address, data, strb, **kwargs)
        expected = AxiResp.OKAY if mapped else AxiResp.SLVERR
        assert response.resp == expected, (
            f"write of {address + first:#x}: {response.resp!r}, expected {expected!r}")

    async def read(self, address, first=0, count=4):
        """Read bytes ``first`` to ``first + count - 1`` of word ``address`` and check them and
        the response against the model."""
        response = await self.master.read(address + first, count)
        value, mapped = self.model.read(address)
        expected = AxiResp.OKAY if mapped else AxiResp.SLVERR
        assert response.resp == expected, (
            f"read of {address + first:#x}: {response.resp!r}, expected {expected!r}")
        want = (value >> 8 * first) & ((1 << 8 * count) - 1)
        got = int.from_bytes(response.data, "little")
        assert got == want, f"read of {address + first:#x}: {got:#x}, expected {want:#x}"

    def drive_ro(self, register, field, value):
        self.port(register, field).value = value
        self.model.state[register.name, field.name] = value

    async def set_w1c(self, register, field, bits):
        """Raise the set input of a W1C field for one cycle."""
        await RisingEdge(self.dut.clk)
        self.port(register, field, "_set").value = bits
        await RisingEdge(self.dut.clk)
        self.port(register, field, "_set").value = 0
        self.model.state[register.name, field.name] |= bits

    async def release_when_written(self, signal):
        """Drive ``signal`` low after the clock edge at which the next write lands (the edge
        that raises ``bvalid``), so that it was high at that edge and at no later one."""
        while True:
            await FallingEdge(self.dut.clk)
            if int(self.dut.bus__bvalid.value):
                signal.value = 0
                return

    def unmapped_offsets(self):
        mapped = set(self.model.by_offset)
        return [o for o in range(0, 1 << self.model.regmap.addr_width, 4) if o not in mapped]

    def random_strobe(self):
        first = self.rng.randrange(4)
        last = self.rng.randrange(first, 4)
        return sum(1 << byte for byte in range(first, last + 1))

    async def check_pulses(self):
        await ClockCycles(self.dut.clk, 3)
        assert self.pulses == self.model.pulses, (
            f"W1P pulses {self.pulses[:8]}..., expected {self.model.pulses[:8]}...")


@cocotb.test(timeout_time=200, timeout_unit="us")
async def reset_values(dut):
    """Every register reads its reset value; writes to constants and inputs change nothing."""
    tb = TB(dut, cocotb.RANDOM_SEED)
    await tb.reset()
    for register in tb.model.regmap:
        assert tb.model.read(register.offset)[0] == register.reset_value
        await tb.read(register.offset)
    for register in tb.model.regmap:
        if all(f.access in (Access.CONST, Access.RO) for f in register.fields):
            await tb.write(register.offset, 0xFFFFFFFF, 0xF)
            await tb.read(register.offset)
    await tb.check_pulses()


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def random_traffic(dut):
    """One transaction at a time, every kind of access, random pauses on every channel."""
    tb = TB(dut, cocotb.RANDOM_SEED + 1)
    await tb.reset()
    rng, model = tb.rng, tb.model
    tb.pause(rng.choice([0.2, 0.5]))
    registers = list(model.regmap)
    writable = [r for r in registers
                if any(f.access not in (Access.CONST, Access.RO) for f in r.fields)]
    ro_fields = model.fields(Access.RO)
    w1c_fields = model.fields(Access.W1C)
    holes = tb.unmapped_offsets()
    counts = dict.fromkeys(["write", "read", "ro", "set", "set+clear", "hole"], 0)
    for _ in range(3000):
        kind = rng.choices(["write", "read", "ro", "set", "set+clear", "hole"],
                           [30, 40, 8, 8, 4, 4])[0]
        counts[kind] += 1
        if kind == "write":
            register = rng.choice(writable)
            data = rng.getrandbits(32) if rng.random() < 0.7 else 0xFFFFFFFF
            await tb.write(register.offset, data, tb.random_strobe())
        elif kind == "read":
            register = rng.choice(registers)
            first = rng.randrange(4) if rng.random() < 0.3 else 0
            await tb.read(register.offset, first, rng.randrange(1, 5 - first))
        elif kind == "ro":
            register, field = rng.choice(ro_fields)
            tb.drive_ro(register, field, rng.getrandbits(field.width))
        elif kind == "set":
            register, field = rng.choice(w1c_fields)
            await tb.set_w1c(register, field, rng.getrandbits(field.width))
        elif kind == "set+clear":
            # The set input stays high through a write that clears the same bits: set wins.
            register, field = rng.choice(w1c_fields)
            bits = (1 << field.width) - 1
            tb.port(register, field, "_set").value = bits
            cocotb.start_soon(tb.release_when_written(tb.port(register, field, "_set")))
            await tb.write(register.offset, bits << field.lsb, 0xF,
                           held_sets=[(register.name, field.name, bits)])
            await tb.read(register.offset)
        else:
            offset = rng.choice(holes)
            if rng.random() < 0.5:
                await tb.write(offset, rng.getrandbits(32), tb.random_strobe())
            else:
                await tb.read(offset)
    for register in registers:
        await tb.read(register.offset)
    await tb.check_pulses()
    dut._log.info("operations %s; %d W1P pulses checked", counts, len(tb.pulses))


@cocotb.test(timeout_time=200, timeout_unit="us")
async def concurrent_traffic(dut):
    """Writes to the RW registers run alongside reads of the others; queued writes keep their
    order; then every register reads back as the model says."""
    tb = TB(dut, cocotb.RANDOM_SEED + 2)
    await tb.reset()
    rng, model = tb.rng, tb.model
    tb.pause(0.3)
    for register, field in model.fields(Access.RO):
        tb.drive_ro(register, field, rng.getrandbits(field.width))
    rw = [r for r in model.regmap if all(f.access is Access.RW for f in r.fields)]
    others = [r for r in model.regmap if r not in rw]

    async def writer():
        for _ in range(60):
            register = rng.choice(rw)
            await tb.write(register.offset, rng.getrandbits(32), tb.random_strobe())
        # Several writes queued at once: the bank takes them one by one, in order.
        queued = []
        for _ in range(8):
            register, data = rng.choice(rw), rng.getrandbits(32)
            task = cocotb.start_soon(tb.master.write(register.offset, data.to_bytes(4, "little")))
            queued.append((register, data, task))
        for register, data, task in queued:
            assert (await task).resp == AxiResp.OKAY
            model.write(register.offset, data, 0xF)

    async def reader():
        for _ in range(80):
            await tb.read(rng.choice(others).offset)
        # Several reads queued at once: each returns its own register.
        queued = [cocotb.start_soon(tb.read(rng.choice(others).offset)) for _ in range(8)]
        for task in queued:
            await task

    writing = cocotb.start_soon(writer())
    reading = cocotb.start_soon(reader())
    await writing
    await reading
    for register in model.regmap:
        await tb.read(register.offset)
    await tb.check_pulses()
