"""Golden model of the accelerator socket: a descriptor list run on an external-memory image.

:class:`SocketModel` does what the RTL does when the host starts a list: fetch each
descriptor (``hls_ref.descriptor``), validate it, load the tile's operands from memory in the
formats of ``docs/formats.md``, run the command on the invocation-level golden model
(``hls_ref.invocation``) and store the output tile. The memory image after a run, the status
word and the counters are what the RTL must reproduce bit for bit; RTL tests compare whole
memory images, so a write outside a tile's output region is caught too.

Errors follow one rule: every command before the failing one completes, stores included; the
failing command and everything after it write nothing (an AXI write error may leave the
failing command's own output region partly written). The list then stops with
``STATUS.error``, the code and the index of the failing descriptor.

Loads and stores are the DMA requests of :func:`hls_ref.dma.dma_request`. ``BYTES_READ``
counts whole beats of the descriptor fetches and loads, ``BYTES_WRITTEN`` the bytes of the
stores; both include the transfers of a failing command, which the hardware completes even
when memory answers with an error.
"""

from dataclasses import dataclass, field

import numpy as np

from .config import DEFAULT_CONFIG, FC_MAX_OUTPUTS, Limits
from .descriptor import (
    DESCRIPTOR_BYTES,
    Descriptor,
    ErrorCode,
    Op,
    check,
    check_fc,
    fc_geometry,
    geometry,
    output_request,
)
from .dma import BEAT_BYTES, DmaRequest, dma_request
from .formats import QuantBlock, fc_stream_weights
from .invocation import Command, ConvAccelerator, FCAccelerator
from .perchannel import PerChannelEngine
from .st import signed_field

__all__ = ["ENGINES", "ConvEngine", "FCEngine", "SocketModel", "Status", "check_descriptor",
           "fc_load_requests", "fc_store_request", "input_tile", "load_requests", "read_qblock",
           "store_request", "store_tile"]


#: Byte addresses are 32 bits wide; address arithmetic wraps modulo 2**32, as on the bus.
ADDR_MASK = (1 << 32) - 1


def _stride_bytes(elements, bits):
    """A stride of ``elements`` ``bits``-bit elements in bytes, modulo 2**32."""
    return elements * bits // 8 & ADDR_MASK


def load_requests(desc, config):
    """``(input, weights, qblock or None)`` requests of a valid descriptor."""
    geo = geometry(desc)
    bits = geo.precision.act_bits
    if geo.narrow:       # whole rows, each pixel 4 or 8 bits
        row_bytes = -(-desc.in_w * desc.in_pixel_stride * bits // 8)
        x = dma_request(desc.in_addr, row_bytes, 1, 0, desc.in_h,
                        _stride_bytes(desc.in_row_stride, bits))
    else:
        x = dma_request(desc.in_addr, 2 * geo.groups, desc.in_w,
                        _stride_bytes(desc.in_pixel_stride, bits), desc.in_h,
                        _stride_bytes(desc.in_row_stride, bits))
    w = DmaRequest(desc.w_addr, 2 * desc.kernel_h * desc.kernel_w * geo.groups * config.pes)
    q = (DmaRequest(desc.q_addr, BEAT_BYTES * (1 + 2 * desc.out_c))
         if (not desc.acc_flag or desc.q_flag) else None)
    return x, w, q


def store_request(desc):
    """The output request of a valid descriptor with ``q_flag`` set."""
    geo = geometry(desc)
    return output_request(desc, geo.out_h, geo.out_w, geo.out_bits)


def fc_load_requests(desc, fc):
    """``(input, weights, qblock or None)`` requests of a valid FC descriptor on a datapath
    built from ``fc`` (:class:`hls_ref.config.FCConfig`): every vector in whole beats, the
    weight stream block after block, the shared-layout quantization block."""
    geo = fc_geometry(desc, fc)
    x = dma_request(desc.in_addr, BEAT_BYTES * geo.vector_beats, desc.in_h,
                    _stride_bytes(desc.in_row_stride, geo.precision.act_bits), 1, 0)
    block = BEAT_BYTES * geo.rows.block_beats
    w = dma_request(desc.w_addr, block, geo.rows.blocks, block, 1, 0)
    q = (DmaRequest(desc.q_addr, BEAT_BYTES * (2 + (desc.out_c + 1) // 2))
         if (not desc.acc_flag or desc.q_flag) else None)
    return x, w, q


def fc_store_request(desc):
    """The output request of a valid FC descriptor with ``q_flag`` set: one segment of
    ``out_seg`` elements (zero-filled to a whole byte) per vector."""
    ob = {0: 4, 1: 8, 2: 16}[desc.out_width]
    return dma_request(desc.out_addr, -(-desc.out_seg * ob // 8), desc.in_h,
                       _stride_bytes(desc.out_row_stride, ob), 1, 0)


def _fc_scale_ok(bits):
    """The shared scale is a positive normal double (sign 0, exponent neither 0 nor all
    ones): the requantizer's integer algorithm is defined for those."""
    exponent = bits >> 52 & 0x7FF
    return not bits >> 63 and 0 < exponent < 0x7FF


@dataclass
class Status:
    """The status word and counters after a list (``hls_ref.registers``)."""

    done: bool = False
    error: bool = False
    code: ErrorCode = ErrorCode.NONE
    index: int = 0
    progress: int = 0
    mac_cycles: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    tiles: int = 0
    outputs: list = field(default_factory=list)   # (descriptor index, output tile) per store


class _FaultError(Exception):
    def __init__(self, code):
        self.code = code


class _Memory:
    """Byte-addressed external memory with optional address ranges that answer with an
    error response (a whole beat errs if any of its bytes is in a faulty range)."""

    def __init__(self, data, faults):
        self.data = data
        self.faults = [(int(a), int(b)) for a, b in faults]
        self.write_errors = True

    def _check(self, request, code):
        n = request.seg_bytes
        for a in request.segments():
            lo, hi = a // BEAT_BYTES * BEAT_BYTES, ((a + n - 1) // BEAT_BYTES + 1) * BEAT_BYTES
            if hi > len(self.data) or any(f0 < hi and lo < f1 for f0, f1 in self.faults):
                raise _FaultError(code)

    def read_request(self, request):
        self._check(request, ErrorCode.AXI_READ)

    def check_write(self, request):
        if self.write_errors:
            self._check(request, ErrorCode.AXI_WRITE)

    def read_bytes(self, addr, count):
        self._check(DmaRequest(addr, count), ErrorCode.AXI_READ)
        return self.data[addr:addr + count]

    def read_elements(self, byte_addr, index, bits):
        """Signed ``bits``-bit elements at element ``index`` (array) from ``byte_addr``."""
        pos = (8 * byte_addr + np.asarray(index, np.int64) * bits) % (8 << 32)
        start = pos // 8
        raw = np.zeros(pos.shape, np.int64)
        for k in range(3):
            # bytes past the end of memory only ever hold bits above the element
            raw |= np.take(self.data, start + k, mode="clip").astype(np.int64) << (8 * k)
        return signed_field(raw >> (pos % 8), 0, bits)

    def write_segment(self, addr, values, bits):
        """Pack elements densely from byte ``addr``, zero-filled to a whole byte."""
        values = np.asarray(values, np.int64).ravel() & ((1 << bits) - 1)
        if bits == 4:
            values = np.concatenate([values, np.zeros(len(values) % 2, np.int64)])
            data = values[0::2] | values[1::2] << 4
        elif bits == 8:
            data = values
        else:
            data = np.stack([values & 0xFF, values >> 8], axis=1).ravel()
        # (only a run without write errors reaches past the image: those bytes are dropped)
        data = data[:max(0, len(self.data) - addr)]
        self.data[addr:addr + len(data)] = data.astype(np.uint8)


def _input_tile(mem, desc):
    """The input tile as the PE array sees it: whole ST groups of channels (``in_h, in_w,
    groups * lanes``); a narrow pixel's missing channels read as zero."""
    geo = geometry(desc)
    p = geo.precision
    channels = geo.groups * p.lanes
    h, w, c = np.meshgrid(np.arange(desc.in_h), np.arange(desc.in_w), np.arange(channels),
                          indexing="ij")
    index = h * desc.in_row_stride + w * desc.in_pixel_stride + c
    x = mem.read_elements(desc.in_addr, index, p.act_bits)
    return np.where(c < desc.in_pixel_stride, x, 0)


def input_tile(memory, desc):
    """The values (``in_h, in_w, groups * lanes``) a valid descriptor's input tile holds in
    ``memory`` (a ``uint8`` array), as the input loader puts them in the PLM."""
    return _input_tile(_Memory(memory, ()), desc)


def _store_tile(mem, desc, y):
    geo = geometry(desc)
    _store_segments(mem, desc, y, geo.out_h, geo.out_w, geo.out_bits)


def _store_segments(mem, desc, y, out_h, out_w, ob):
    """Write an ``out_h x out_w`` tile of ``ob``-bit outputs as a store unit does (every
    datapath stores the same way)."""
    out = np.zeros((out_h, out_w, desc.out_seg), np.int64)
    out[..., :desc.out_c] = y[..., :desc.out_c]
    row, pixel = _stride_bytes(desc.out_row_stride, ob), _stride_bytes(desc.out_pixel_stride, ob)
    if desc.out_seg == desc.out_pixel_stride:
        for r in range(out_h):
            mem.write_segment((desc.out_addr + r * row) & ADDR_MASK, out[r], ob)
    else:
        for r in range(out_h):
            for q in range(out_w):
                mem.write_segment((desc.out_addr + r * row + q * pixel) & ADDR_MASK,
                                  out[r, q], ob)


def store_tile(memory, desc, y):
    """Write output tile ``y`` (``out_h, out_w, >= out_c`` values) of a valid descriptor into
    ``memory`` (a ``uint8`` array) as the store unit does: ``out_seg`` elements per pixel,
    zeros after the ``out_c`` results, contiguous rows zero-filled to a whole byte."""
    _store_tile(_Memory(memory, ()), desc, np.asarray(y, np.int64))


def _unpack_weights(words, precision):
    """Weight values of ST ``B`` words (..., G) -> (..., G * lanes): the inverse of
    :func:`hls_ref.st.pack_weights` (channel ``g * lanes + k`` in slot ``lanes - 1 - k``)."""
    p = precision
    lanes = [signed_field(words, (p.lanes - 1 - k) * p.slot_bits, p.weight_bits)
             for k in range(p.lanes)]
    return np.stack(lanes, axis=-1).reshape(*words.shape[:-1], -1)


class ConvEngine:
    """The conv2d datapath's commands: checks (:func:`hls_ref.descriptor.check`), loads,
    compute on :class:`hls_ref.invocation.ConvAccelerator` and store.

    An engine of :class:`SocketModel` has ``check(desc)`` (the error code, in the hardware's
    order), ``run(mem, desc, index, status)`` (one valid command: counts its transfers and
    MAC cycles into ``status``, raises ``_FaultError`` on an error response) and ``reset()``
    (its partial sums are lost)."""

    op = Op.CONV2D

    def __init__(self, config):
        self.config = config
        self.accelerator = ConvAccelerator(config.limits())
        self.acc_shape = None

    def reset(self):
        self.accelerator.acc = None
        self.acc_shape = None

    def check(self, desc):
        return check(desc, self.config, self.acc_shape)

    def run(self, mem, desc, index, status):
        geo = geometry(desc)
        p, pes = geo.precision, self.config.pes
        x_req, w_req, q_req = load_requests(desc, self.config)
        loads = [req for req in (x_req, w_req, q_req) if req is not None]
        # the hardware reads every beat of the three loads, erroneous or not
        status.bytes_read += sum(BEAT_BYTES * req.beat_count() for req in loads)
        for req in loads:
            mem.read_request(req)

        x = _input_tile(mem, desc)

        words = mem.read_bytes(desc.w_addr, w_req.seg_bytes).view("<u2").astype(np.int64)
        words = words.reshape(desc.kernel_h, desc.kernel_w, geo.groups, pes)
        weights = _unpack_weights(words.transpose(3, 0, 1, 2), p)     # (P, kh, kw, C)

        qblock = read_qblock(mem, desc, q_req, pes)
        cmd = Command(p, geo.out_bits, (desc.kernel_h, desc.kernel_w),
                      (desc.stride_h, desc.stride_w),
                      (desc.pad_top, desc.pad_bottom, desc.pad_left, desc.pad_right),
                      int(signed_field(desc.pad_value, 0, p.act_bits)),
                      acc_flag=bool(desc.acc_flag), q_flag=bool(desc.q_flag))
        y = self.accelerator.invoke(cmd, x, weights, qblock)
        self.acc_shape = (geo.out_h, geo.out_w)
        status.mac_cycles += (geo.out_h * geo.out_w * desc.kernel_h * desc.kernel_w
                              * geo.groups)
        if y is None:
            return
        store = store_request(desc)
        status.bytes_written += store.bytes
        mem.check_write(store)
        _store_tile(mem, desc, y)
        status.outputs.append((index, y[..., :desc.out_c]))


def read_qblock(mem, desc, q_req, pes, entries=None):
    """The command's quantization block, widened to ``pes`` channels (unused PEs get zeros);
    a placeholder when the command loads none (it neither starts nor requantizes). A block
    whose entry count is not ``entries`` (default ``out_c``) or that asks for
    double-precision scaling ends the list with ``BAD_QBLOCK``."""
    entries = desc.out_c if entries is None else entries
    zeros = np.zeros(pes, np.int64)
    if q_req is None:
        return QuantBlock(0, 0, 0, zeros, zeros, zeros)
    raw = mem.read_bytes(desc.q_addr, q_req.seg_bytes).view("<u8")
    header = int(raw[0])
    if (header >> 56) + 1 != entries or header >> 48 & 1:
        raise _FaultError(ErrorCode.BAD_QBLOCK)
    q = QuantBlock.unpack(raw)
    low = max(q.act_min, q.zero_point) if desc.relu else q.act_min

    def widen(values):
        return np.concatenate([values, zeros[:pes - entries]])

    return QuantBlock(q.zero_point, low, q.act_max, widen(q.bias), widen(q.multiplier),
                      widen(q.shift))


class FCEngine:
    """The FC datapath's commands (an engine of :class:`SocketModel`, see
    :class:`ConvEngine`): checks (:func:`hls_ref.descriptor.check_fc`), loads, compute on
    :class:`hls_ref.invocation.FCAccelerator` (its capacities are the ``fc`` section's, checked
    by ``check_fc``) and store.

    The hardware multiplies whole steps, so the inputs after ``in_c`` in the last step (memory
    contents, within the vector's last beat) meet the weights the blob holds for them (zeros,
    as the compiler writes it)."""

    op = Op.FC

    def __init__(self, config):
        self.config = config
        unbounded = 1 << 40
        self.accelerator = FCAccelerator(Limits(pes=FC_MAX_OUTPUTS, plm_in=unbounded,
                                                plm_w=unbounded, plm_acc=unbounded))
        self.acc_shape = None

    def reset(self):
        self.accelerator.acc = None
        self.acc_shape = None

    def check(self, desc):
        return check_fc(desc, self.config.fc, self.acc_shape)

    def run(self, mem, desc, index, status):
        fc = self.config.fc
        geo = fc_geometry(desc, fc)
        p, rows = geo.precision, geo.rows
        x_req, w_req, q_req = fc_load_requests(desc, fc)
        loads = [req for req in (x_req, w_req, q_req) if req is not None]
        status.bytes_read += sum(BEAT_BYTES * req.beat_count() for req in loads)

        def faulty(req):
            try:
                mem.read_request(req)
            except _FaultError:
                return True
            return False

        # The datapath computes while the weights stream, once the input and the block have
        # arrived intact: an error response in the weight stream is found at its end, after
        # the command's MAC cycles (they count); one in the input or the block, or a bad
        # block, is found before (nothing is computed).
        if faulty(x_req) or (q_req is not None and faulty(q_req)):
            raise _FaultError(ErrorCode.AXI_READ)
        weights_faulty = faulty(w_req)
        macs = rows.blocks * rows.steps * desc.in_h

        inputs = rows.steps * rows.step_inputs
        index_of = (np.arange(desc.in_h)[:, None] * desc.in_row_stride
                    + np.arange(inputs)[None, :])
        x = mem.read_elements(desc.in_addr, index_of, p.act_bits)

        zeros = np.zeros(desc.out_c, np.int64)
        qblock = QuantBlock(0, 0, 0, zeros, zeros, zeros)
        if q_req is not None:
            raw = mem.read_bytes(desc.q_addr, q_req.seg_bytes).view("<u8")
            header = int(raw[0])
            if ((header >> 56) + 1 != desc.out_c or header >> 48 & 3 != 3
                    or not _fc_scale_ok(int(raw[1]))):
                raise _FaultError(ErrorCode.AXI_READ if weights_faulty
                                  else ErrorCode.BAD_QBLOCK)
            q = QuantBlock.unpack(raw)
            low = max(q.act_min, q.zero_point) if desc.relu else q.act_min
            qblock = QuantBlock(q.zero_point, low, q.act_max, q.bias, q.multiplier, q.shift,
                                q.real_scale)
        if weights_faulty:
            status.mac_cycles += macs
            raise _FaultError(ErrorCode.AXI_READ)
        # (the stream is one segment per block: a whole layer may exceed a segment's bytes)
        block = BEAT_BYTES * rows.block_beats
        raw = np.concatenate([mem.read_bytes(desc.w_addr + k * block, block)
                              for k in range(rows.blocks)]).view("<u8")
        weights = fc_stream_weights(raw, rows)[:desc.out_c]
        cmd = Command(p, geo.out_bits, acc_flag=bool(desc.acc_flag),
                      q_flag=bool(desc.q_flag))
        y = self.accelerator.invoke(cmd, x, weights, qblock)
        self.acc_shape = (desc.in_h, desc.out_c)
        status.mac_cycles += macs
        if y is None:
            return
        store = fc_store_request(desc)
        status.bytes_written += store.bytes
        mem.check_write(store)
        out = np.zeros((desc.in_h, desc.out_seg), np.int64)
        out[:, :desc.out_c] = y
        row = _stride_bytes(desc.out_row_stride, geo.out_bits)
        for b in range(desc.in_h):
            mem.write_segment((desc.out_addr + b * row) & ADDR_MASK, out[b], geo.out_bits)
        status.outputs.append((index, y))


#: The golden engine of each datapath, by descriptor ``op``.
ENGINES = {Op.CONV2D: ConvEngine, Op.DEPTHWISE: PerChannelEngine, Op.FC: FCEngine}


def check_descriptor(desc, config, acc_shape=None):
    """The code :class:`SocketModel` reports for ``desc`` before it touches memory on a build
    from ``config``: the checks of the engine of its ``op``, ``BAD_OP`` when the build has no
    datapath for it; ``acc_shape`` is the shape of the partial sums that datapath holds."""
    if desc.op not in config.ops:
        return ErrorCode.BAD_OP
    engine = ENGINES[desc.op](config)
    engine.acc_shape = acc_shape
    return engine.check(desc)


class SocketModel:
    """The accelerator as the host sees it: ``run`` a descriptor list on a memory image.

    Each descriptor goes to the engine of its ``op`` (:data:`ENGINES`, for the datapaths the
    build has: ``config.ops``); an ``op`` without one ends the list with ``BAD_OP``. Partial
    sums belong to their datapath; an error loses every datapath's.

    Parameters
    ----------
    config : AcceleratorConfig
        The build (its datapaths, PEs, PLM banks, limits, precisions).
    """

    def __init__(self, config=DEFAULT_CONFIG):
        self.config = config
        self.engines = {op: ENGINES[op](config) for op in config.ops if op in ENGINES}

    def reset(self):
        for engine in self.engines.values():
            engine.reset()

    def run(self, memory, desc_addr, count, *, faults=(), write_errors=True):
        """Run ``count`` descriptors from byte ``desc_addr`` of ``memory`` (a writable numpy
        ``uint8`` array, changed in place). ``faults`` lists ``(start, stop)`` byte ranges
        whose beats answer with an error response. Returns the :class:`Status`.

        With ``write_errors=False`` no store fails (writes to faulty or missing memory are
        dropped): the status then bounds the reads and MAC cycles that the hardware, whose
        pipeline runs ahead of its stores, may count after a write error."""
        mem = _Memory(memory, faults)
        mem.write_errors = write_errors
        status = Status()
        if desc_addr % DESCRIPTOR_BYTES:
            # refused before anything is fetched
            self.reset()
            status.error, status.code = True, ErrorCode.BAD_DESC_ADDR
            return status
        for index in range(count):
            try:
                # a transfer counts whether or not it ends in an error response
                status.bytes_read += DESCRIPTOR_BYTES
                raw = mem.read_bytes(desc_addr + index * DESCRIPTOR_BYTES, DESCRIPTOR_BYTES)
                desc = Descriptor.from_bytes(raw)
                engine = self.engines.get(desc.op)
                code = ErrorCode.BAD_OP if engine is None else engine.check(desc)
                if code != ErrorCode.NONE:
                    raise _FaultError(code)
                engine.run(mem, desc, index, status)
            except _FaultError as fault:
                self.reset()
                status.error, status.code, status.index = True, fault.code, index
                return status
            status.progress += 1
            status.tiles += 1
        status.done = True
        return status
