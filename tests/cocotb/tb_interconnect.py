"""cocotb testbench of the AXI4 interconnect (``hdl.soc.interconnect.AxiInterconnect``):
cocotbext-axi ``AxiMaster`` models on every manager port and an ``AxiRam`` on the subordinate
port, random pauses on every channel of both sides.

Every manager runs random reads and writes at once (unaligned, any length, so bursts of every
size, narrow strobes and several IDs in flight): writes go to the manager's own region, reads to
any region. A scoreboard applies every completed write to a model of the memory; each read
must return the model's bytes (a region is read only while no write to it is in flight), and
at the end the whole memory must equal the model. A monitor on the subordinate port checks
that each request carries its manager's index above the manager's ID, that write data follow
the order of the write requests, and counts the bytes each manager moved.
"""

import logging
import random
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Event, FallingEdge, ReadOnly
from cocotbext.axi import AxiBus, AxiMaster, AxiRam

from sim.runner import Design

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi\.")

REGION_BYTES = 1 << 16
CHANNELS = ("aw", "w", "b", "ar", "r")


def pauses(rng, probability):
    while True:
        yield rng.random() < probability


def set_pauses(model, rng, probability):
    for interface in (model.write_if, model.read_if):
        for channel in CHANNELS:
            port = getattr(interface, f"{channel}_channel", None)
            if port is not None:
                port.set_pause_generator(pauses(rng, probability) if probability else None)


class SubordinateMonitor:
    """Checks the subordinate port every cycle (see the module docstring)."""

    def __init__(self, dut, managers, id_width):
        self.dut = dut
        self.id_width = id_width
        self.aw_order = []          # manager index of each accepted AW, in order
        self.w_bursts = 0           # write bursts whose data have passed
        self.w_owner = None
        self.errors = []
        self.read_bytes = [0] * managers
        self.written_bytes = [0] * managers

    def _signal(self, name):
        return int(getattr(self.dut, f"sub__{name}").value)

    async def run(self):
        pending_w = []              # AW owners whose data have not all passed yet
        aw_seen = False             # the request on the port is already in pending_w
        while True:
            await FallingEdge(self.dut.clk)
            await ReadOnly()
            # write data may pass before their request is accepted (AXI allows it): take each
            # request when it first appears on the port
            if self._signal("awvalid") and not aw_seen:
                owner = self._signal("awid") >> self.id_width
                pending_w.append((owner, self._signal("awlen") + 1))
                aw_seen = True
            if self._signal("awvalid") and self._signal("awready"):
                aw_seen = False
            if self._signal("rvalid") and self._signal("rready"):
                self.read_bytes[self._signal("rid") >> self.id_width] += 8
            if self._signal("wvalid") and self._signal("wready"):
                if not pending_w:
                    self.errors.append("write data without a granted write request")
                    continue
                owner, beats = pending_w[0]
                strobes = bin(self._signal("wstrb")).count("1")
                self.written_bytes[owner] += strobes
                beats -= 1
                last = self._signal("wlast")
                if (beats == 0) != bool(last):
                    self.errors.append(f"wlast {last} with {beats} beats left of manager "
                                       f"{owner}'s burst")
                if beats == 0:
                    pending_w.pop(0)
                else:
                    pending_w[0] = (owner, beats)


async def manager_traffic(index, master, model, busy, rng, count, managers):
    """Random reads and writes of manager ``index`` (see the module docstring)."""
    base = index * REGION_BYTES
    for _ in range(count):
        length = rng.choice([1, 2, 3, 5, 8, 13, 64, 100, 257, 1000, 2050])
        if rng.random() < 0.5:
            addr = base + rng.randrange(0, REGION_BYTES - length)
            data = rng.randbytes(length)
            busy[index] += 1
            await master.write(addr, data)
            model[addr:addr + length] = data
            busy[index] -= 1
            if not busy[index]:
                quiet[index].set()
        else:
            region = rng.randrange(managers)
            addr = region * REGION_BYTES + rng.randrange(0, REGION_BYTES - length)
            while busy[region]:
                quiet[region].clear()
                await quiet[region].wait()
            before = bytes(model[addr:addr + length])
            result = await master.read(addr, length)
            if busy[region] == 0 and bytes(result.data) != before:
                raise AssertionError(f"manager {index} read {length} bytes at {addr:#x}: got "
                                     f"{bytes(result.data)[:16].hex()}..., expected "
                                     f"{before[:16].hex()}...")


quiet = []


async def setup(dut, **master_options):
    """Clock, an AxiRam on the subordinate port, an AxiMaster on every manager port, reset,
    the monitor; returns (managers, ram, masters, monitor)."""
    component = Design.from_env().build()
    managers = len(component.managers)
    id_width = component.managers[0].arid.shape().width
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    ram = AxiRam(AxiBus.from_prefix(dut, "sub", bus_separator="__"), dut.clk, dut.rst,
                 size=managers * REGION_BYTES)
    masters = [AxiMaster(AxiBus.from_prefix(dut, f"managers__{k}", bus_separator="__"),
                         dut.clk, dut.rst, **master_options) for k in range(managers)]
    for unit in (ram, *masters):
        for interface in (unit.read_if, unit.write_if):
            interface.log.setLevel(logging.WARNING)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    monitor = SubordinateMonitor(dut, managers, id_width)
    cocotb.start_soon(monitor.run())
    return managers, ram, masters, monitor


@cocotb.test()
async def random_traffic(dut):
    """All managers at once, heavy then light pauses on every channel."""
    rng = random.Random(cocotb.RANDOM_SEED)
    flow = random.Random(cocotb.RANDOM_SEED + 1)
    managers, ram, masters, monitor = await setup(dut)
    memory_bytes = managers * REGION_BYTES
    initial = rng.randbytes(memory_bytes)
    ram.write(0, initial)
    model = bytearray(initial)
    quiet.clear()
    quiet.extend(Event() for _ in range(managers))
    busy = [0] * managers
    for probability in (0.5, 0.1):
        set_pauses(ram, flow, probability)
        for master in masters:
            set_pauses(master, flow, probability)
        tasks = [cocotb.start_soon(manager_traffic(k, masters[k], model, busy,
                                                   random.Random(rng.random()), 15, managers))
                 for k in range(managers)]
        for task in tasks:
            await task
    await ClockCycles(dut.clk, 5)
    assert not monitor.errors, "\n".join(monitor.errors[:10])
    assert ram.read(0, memory_bytes) == bytes(model), "memory differs from the scoreboard"
    dut._log.info("bytes read per manager %s, written %s", monitor.read_bytes,
                  monitor.written_bytes)
    assert all(monitor.read_bytes) and all(monitor.written_bytes)


@cocotb.test()
async def fair_full_rate(dut):
    """Every manager reads 4 KiB in 16-beat bursts at once from a memory without pauses: the
    subordinate's read data channel stays busy (one beat per cycle but for the first request's
    latency) and every manager gets all its bytes."""
    managers, _, masters, monitor = await setup(dut, max_burst_len=16)
    beats = 4096 // 8
    start = cocotb.utils.get_sim_time("ns")
    tasks = [cocotb.start_soon(masters[k].read(k * REGION_BYTES, 8 * beats))
             for k in range(managers)]
    for task in tasks:
        await task
    cycles = (cocotb.utils.get_sim_time("ns") - start) / 10
    rate = managers * beats / cycles
    dut._log.info("%d managers x %d beats in %d cycles: %.3f beats/cycle", managers, beats,
                  cycles, rate)
    assert monitor.read_bytes == [8 * beats] * managers
    assert rate >= 0.9 * managers * beats / (managers * beats + 60)
