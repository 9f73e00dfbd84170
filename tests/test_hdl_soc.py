"""The SoC's configuration, address map, boot ROM and generated headers (no simulation)."""

import struct
import subprocess
import sys

import pytest

from hdl.soc.accelerators import build_accelerator
from hdl.soc.boot import BOOT_SOURCE, boot_program
from hls_ref.config import (
    CONV_SOC,
    DEFAULT_CONFIG,
    DEFAULT_SOC,
    SOC_BUILDS,
    AcceleratorConfig,
    SocConfig,
)
from hls_ref.descriptor import Op
from hls_ref.image import c_header as image_header
from hls_ref.soc_map import SYSCTRL, c_header, linker_script, reg


def test_soc_config_round_trips_and_checks_its_fields():
    assert SocConfig.from_dict(DEFAULT_SOC.as_dict()) == DEFAULT_SOC
    assert DEFAULT_SOC.datapaths() == (1 << Op.CONV2D | 1 << Op.DEPTHWISE | 1 << Op.FC)
    assert [DEFAULT_SOC.find(op) for op in Op] == [[0]] * len(Op)
    assert CONV_SOC.find(Op.CONV2D) == [0] and CONV_SOC.find(Op.FC) == []
    assert SOC_BUILDS["cpu"].datapaths() == 0
    two = SocConfig(accelerators=(DEFAULT_CONFIG, DEFAULT_CONFIG))
    assert two.datapaths() == 0x0202 and SocConfig.from_dict(two.as_dict()) == two
    with pytest.raises(ValueError, match=r"^accelerators must be AcceleratorConfig objects, "
                                         r"not \('conv2d', "):
        SocConfig(accelerators=(("conv2d", DEFAULT_CONFIG),))
    with pytest.raises(ValueError, match=r"^accelerators must be at most 4 "):
        SocConfig(accelerators=(DEFAULT_CONFIG,) * 5)
    with pytest.raises(ValueError, match=r"^ram_bytes must be a power of two from 4096 to "
                                         r"524288, not 5000$"):
        SocConfig(ram_bytes=5000)
    with pytest.raises(ValueError, match=r"^uart_divisor must be an integer from 5 to 65535"):
        SocConfig(uart_divisor=2)


def test_datapaths_without_rtl_are_refused_with_the_way_out(monkeypatch):
    import hdl.accelerator

    # a registry without the FC datapath's RTL stands for any datapath not built yet
    monkeypatch.setattr(hdl.accelerator, "DATAPATHS",
                        {op: f for op, f in hdl.accelerator.DATAPATHS.items() if op != Op.FC})
    config = AcceleratorConfig(fc={})
    with pytest.raises(ValueError, match=r"no RTL implements the fc datapath yet .*the "
                                         r"processor runs those layers"):
        build_accelerator(config)


def test_boot_program_equals_the_assembler_output(tmp_path):
    source = tmp_path / "boot.S"
    source.write_text(".text\n.globl _start\n_start:\n" + BOOT_SOURCE)
    zig = [sys.executable, "-m", "ziglang"]
    subprocess.run([*zig, "cc", "-target", "riscv32-freestanding-none",
                    "-mcpu=generic_rv32+m", "-c", str(source), "-o", str(tmp_path / "boot.o")],
                   check=True)
    subprocess.run([*zig, "objcopy", "-O", "binary", str(tmp_path / "boot.o"),
                    str(tmp_path / "boot.bin")], check=True)
    data = (tmp_path / "boot.bin").read_bytes()
    words = list(struct.unpack(f"<{len(data) // 4}I", data))
    assert words == boot_program()[:len(words)]


def test_generated_headers_describe_the_build():
    header = c_header(DEFAULT_SOC)
    assert f"#define SYSCTRL_EXIT 0x{reg(SYSCTRL, 'EXIT').offset:08x}u" in header
    assert "#define ACC_CTRL_IRQ_ENABLE_SHIFT 8" in header
    assert f"#define ACCEL0_DATAPATHS 0x{DEFAULT_SOC.datapaths():08x}u" in header
    assert "RAM_BYTES = 0x00010000;" in linker_script(DEFAULT_SOC)
    text = image_header()
    assert "_Static_assert(sizeof(LayerResult) == 64" in text


def test_two_accelerators_are_two_managers_and_two_register_windows():
    from amaranth.hdl import Fragment

    from hdl.soc.soc import Soc
    from hls_ref.config import ICE40_CONFIG

    config = SocConfig(accelerators=(ICE40_CONFIG, ICE40_CONFIG))
    soc = Soc(config)
    # manager 0 the processor, 1 and 2 the accelerators: two index bits above the 1-bit ID
    assert soc.mem.arid.shape().width == 3
    Fragment.get(soc, None)
    header = c_header(config)
    assert "#define ACCELS 0x00000002u" in header
    assert "#define ACCEL1_DATAPATHS 0x00000002u" in header
