"""Seed 002's tiling algorithm (thesis ch. 4.1-4.2), faithful, with its bugs fixed by default.

``get_tiling`` for 2D convolution: (1) output channels to one PE block when anything
overflows; (2) input channels halved until the tiles fit, stopping at the precision's minimum
(1, 2 or 4 channels at 16, 8 or 4 bits); (3) height cut into stripes of one output row (``ker``
input rows); (4) output channels halved (rounding up) until the weights and outputs fit. The
loop order is output channels, then stripes, then input channels innermost (``zhk``). Depthwise
and FC follow the thesis's simpler variants. Capacities are counted in elements, as the thesis
counts them (its PLMs hold one element per word).

Bugs of the thesis (``notes/seed002-digest.md`` sections 3 and 9) and what ``fixed=True`` does:

* ``mem_out`` uses the input height and width instead of the output's: over-tiles.
  Fixed: the output tile's rows and width.
* Step 2 keeps halving input channels when only the output PLM overflows, though input channels
  do not change the output size. Fixed: it halves only while the input or weight tile
  overflows.
* Rounding to a multiple of 4 by ``x += x % 4`` (7 -> 10, 1 -> 2), and a loop that never ends
  for 3 channels at 4 bits. Fixed: rounding up to the multiple; both variants stop once at or
  below the minimum (Table 5.1 shows 3 channels kept at 4 bits, so the code measured did too).
* Padded stripes at stride 2 start at the wrong rows. Tessera's stripes are always computed
  from the output rows (``sw.tiling.layer_tiling.row_tiles``), so no flag reproduces that one.

``fixed=False`` reproduces Table 5.1's tile counts exactly (``table_5_1``).
"""

from dataclasses import dataclass

from .capacity import TilingError
from .layer_tiling import Tiling

__all__ = ["TABLE_5_1", "ThesisLimits", "get_tiling_conv", "table_5_1", "thesis_tiling"]


@dataclass(frozen=True)
class ThesisLimits:
    """The thesis's constants: PLM capacities in elements, PEs, ``N_C_MAX`` and the largest
    stripe height and row length."""

    plm_in: int
    plm_w: int
    plm_out: int
    pe: int
    n_c_max: int = 16
    n_h_max: int = 1 << 16
    n_w_max: int = 1 << 16
    fc_n_max: int = 1 << 16

    @property
    def filt_max(self):
        return self.pe


MIN_CHANNELS = {16: 1, 8: 2, 4: 4}


def _round_up(x, m, fixed):
    if fixed:
        return -(-x // m) * m
    return x + x % m        # the thesis's rounding


@dataclass(frozen=True)
class ConvTiles:
    """Tile sizes in the thesis's terms: input stripe height and channel tiles."""

    hin_t: int
    cin_t: int
    cout_t: int
    tiles: int


def _mem(hin, win, cin, cout, ker, kernel_w, stride, fixed):
    """(mem_in, mem_w, mem_out) in elements, as the thesis's ``mem_update`` (or fixed)."""
    mem_in = hin * win * cin
    mem_w = ker * kernel_w * cin * cout
    if fixed:
        hout = (hin - ker) // stride + 1
        wout = (win - kernel_w) // stride + 1
        mem_out = max(hout, 1) * max(wout, 1) * cout
    else:
        mem_out = hin * win * cout
    return mem_in, mem_w, mem_out


def get_tiling_conv(hin, win, cin, cout, ker, limits, act_bits, *, kernel_w=None, stride=1,
                    fixed=True):
    """Seed 002's ``get_tiling`` for 2D convolution; raises :class:`TilingError` where it
    returns -1 ("Layer impossible to tile")."""
    kernel_w = kernel_w or ker
    minimum = MIN_CHANNELS[act_bits]
    lim = limits

    def mem(h, ci, co):
        return _mem(h, win, ci, co, ker, kernel_w, stride, fixed)

    def fails(m, check_out=True):
        mi, mw, mo = m
        return lim.plm_in < mi or lim.plm_w < mw or (check_out and lim.plm_out < mo)

    cout_t = cout
    m = mem(hin, cin, cout_t)
    if fails(m) or cout_t > lim.filt_max:
        if cout >= lim.pe:
            cout_t = lim.pe
            m = mem(hin, cin, cout_t)
    cin_t = cin
    while fails(m, check_out=not fixed) or cin_t > lim.n_c_max:
        if cin_t <= minimum:
            break
        cin_t //= 2
        if minimum > 1 and cin_t % minimum:
            cin_t = _round_up(cin_t, minimum, fixed)
        m = mem(hin, cin_t, cout_t)
    hin_t = hin
    if lim.plm_in < m[0] or lim.plm_out < m[2] or hin_t > lim.n_h_max:
        hin_t = ker
        m = mem(hin_t, cin_t, cout_t)
    while cout_t > 1 and (lim.plm_w < m[1] or lim.plm_out < m[2]):
        cout_t = -(-cout_t // 2)
        m = mem(hin_t, cin_t, cout_t)
    if (fails(m) or win > lim.n_w_max or hin_t > lim.n_h_max or cin_t > lim.n_c_max
            or cout_t > lim.filt_max):
        raise TilingError(f"layer impossible to tile (thesis algorithm): tile "
                          f"{hin_t}x{win}x{cin_t}x{cout_t} needs {m[0]}/{m[1]}/{m[2]} input/"
                          f"weight/output elements, the PLMs hold {lim.plm_in}/{lim.plm_w}/"
                          f"{lim.plm_out}")
    stripes = (hin - ker) // stride + 1 if hin_t < hin else 1
    tiles = stripes * -(-cin // cin_t) * -(-cout // cout_t)
    return ConvTiles(hin_t, cin_t, cout_t, tiles)


def get_tiling_depthwise(hin, win, c, ker, limits, *, kernel_w=None, stride=1, fixed=True):
    """Seed 002's depthwise ``get_tiling``: channels to the PEs, stripes, channels halved."""
    kernel_w = kernel_w or ker
    lim = limits

    def mem(h, ch):
        mi, _, mo = _mem(h, win, ch, ch, ker, kernel_w, stride, fixed)
        return mi, ker * kernel_w * ch, mo

    c_t = c
    m = mem(hin, c_t)
    if (lim.plm_in < m[0] or lim.plm_w < m[1] or lim.plm_out < m[2]
            or c_t > lim.n_c_max or c_t > lim.filt_max) and c >= lim.pe:
        c_t = lim.pe
        m = mem(hin, c_t)
    hin_t = hin
    if lim.plm_in < m[0] or lim.plm_out < m[2] or hin_t > lim.n_h_max:
        hin_t = ker
        m = mem(hin_t, c_t)
    # the thesis leaves the input PLM out of this loop; fixed, it is in
    while c_t > 1 and (lim.plm_w < m[1] or lim.plm_out < m[2] or (fixed and lim.plm_in < m[0])):
        c_t = -(-c_t // 2)
        m = mem(hin_t, c_t)
    if (lim.plm_in < m[0] or lim.plm_w < m[1] or lim.plm_out < m[2] or win > lim.n_w_max
            or c_t > lim.filt_max):
        raise TilingError(f"layer impossible to tile (thesis algorithm): depthwise tile "
                          f"{hin_t}x{win}x{c_t} needs {m[0]}/{m[1]}/{m[2]} elements")
    stripes = (hin - ker) // stride + 1 if hin_t < hin else 1
    return ConvTiles(hin_t, c_t, c_t, stripes * -(-c // c_t))


def get_tiling_fc(n, m_out, limits, act_bits, *, fixed=True):
    """Seed 002's FC ``get_tiling``: outputs to the PEs, inputs halved, outputs halved."""
    lim = limits
    minimum = MIN_CHANNELS[act_bits]

    def mem(nt, mt):
        return nt, nt * mt, mt

    def fails(mm):
        return lim.plm_in < mm[0] or lim.plm_w < mm[1] or lim.plm_out < mm[2]

    m_t = m_out
    mm = mem(n, m_t)
    if (fails(mm) or m_t > lim.filt_max) and m_out >= lim.pe:
        m_t = lim.pe
        mm = mem(n, m_t)
    n_t = n
    while fails(mm) or n_t > lim.fc_n_max:
        if n_t <= minimum:
            break
        n_t //= 2
        if minimum > 1 and n_t % minimum:
            n_t = _round_up(n_t, minimum, fixed)
        mm = mem(n_t, m_t)
    while m_t > 1 and (lim.plm_w < mm[1] or lim.plm_out < mm[2]):
        m_t = -(-m_t // 2)
        mm = mem(n_t, m_t)
    if fails(mm) or m_t > lim.filt_max:
        raise TilingError(f"layer impossible to tile (thesis algorithm): FC tile {n_t}x{m_t}")
    return ConvTiles(1, n_t, m_t, -(-n // n_t) * -(-m_out // m_t))


def limits_from_capacity(capacity):
    """Thesis limits of a Tessera build: a PLM word holds ``lanes`` activations or weights."""
    lanes = capacity.lanes
    in_b, w_b, acc_b = capacity.bank_bytes
    if capacity.ocm_bytes is not None:
        share = capacity.ocm_bytes // capacity.banks
        total = in_b + w_b + acc_b
        in_b, w_b, acc_b = (share * b // total for b in (in_b, w_b, acc_b))
    return ThesisLimits(plm_in=in_b // 2 * lanes, plm_w=w_b // 2 * lanes, plm_out=acc_b // 4,
                        pe=capacity.pes, n_w_max=capacity.config.max_width)


def thesis_tiling(layer, capacity, cost=None, *, fixed=True):
    """The thesis's tiling of ``layer`` on a Tessera build, as a :class:`Tiling`."""
    del cost
    limits = limits_from_capacity(capacity)
    h, w, c = layer.in_shape
    kh, kw = layer.kernel
    # the thesis tiles the padded input: the hardware inserts the padding rows and columns
    hp = h + layer.padding.top + layer.padding.bottom
    wp = w + layer.padding.left + layer.padding.right
    try:
        if layer.kind == "conv":
            t = get_tiling_conv(hp, wp, c, layer.out_channels, kh, limits,
                                capacity.act_bits, kernel_w=kw, stride=layer.stride[0],
                                fixed=fixed)
        elif layer.kind == "depthwise":
            t = get_tiling_depthwise(hp, wp, c, kh, limits, kernel_w=kw,
                                     stride=layer.stride[0], fixed=fixed)
        else:
            t = get_tiling_fc(layer.in_channels, layer.out_channels, limits,
                              capacity.act_bits, fixed=fixed)
    except TilingError as e:
        raise TilingError(f"layer {layer.name}: {e}") from None
    rows = 1 if t.hin_t < hp else layer.out_shape[0]
    return Tiling(rows, t.cout_t, t.cin_t, "zhk")


# Seed 002 Table 5.1: (layer, PLM label, PE, precision bits) -> tiles, tile H x W x Cin x Cout
TABLE_5_1 = [
    ("average", "18x18x16x16, 7x7x16x16", 16, 16, 1, (8, 8, 16, 4)),
    ("average", "18x18x16x16, 7x7x16x16", 16, 8, 1, (8, 8, 16, 4)),
    ("average", "18x18x16x16, 7x7x16x16", 16, 4, 1, (8, 8, 16, 4)),
    ("average", "7x7x16x16, 7x7x16x16", 16, 16, 2, (8, 8, 8, 4)),
    ("average", "7x7x16x16, 7x7x16x16", 16, 8, 2, (8, 8, 8, 4)),
    ("average", "7x7x16x16, 7x7x16x16", 16, 4, 2, (8, 8, 8, 4)),
    ("average", "7x7x4x16, 7x7x4x16", 16, 16, 8, (8, 8, 2, 4)),
    ("average", "7x7x4x16, 7x7x4x16", 16, 8, 8, (8, 8, 2, 4)),
    ("average", "7x7x4x16, 7x7x4x16", 16, 4, 24, (3, 8, 4, 4)),
    ("average", "7x7x4x4, 7x7x4x4", 4, 16, 96, (3, 8, 1, 4)),
    ("average", "7x7x4x4, 7x7x4x4", 4, 8, 48, (3, 8, 2, 4)),
    ("average", "7x7x4x4, 7x7x4x4", 4, 4, 24, (3, 8, 4, 4)),
    ("mobilenet-first", "18x18x16x16, 7x7x16x16", 16, 16, 282, (3, 96, 1, 8)),
    ("mobilenet-first", "18x18x16x16, 7x7x16x16", 16, 8, 188, (3, 96, 2, 8)),
    ("mobilenet-first", "18x18x16x16, 7x7x16x16", 16, 4, 94, (3, 96, 3, 8)),
    ("mobilenet-first", "18x18x16x4, 7x7x16x4", 4, 16, 564, (3, 96, 1, 4)),
    ("mobilenet-first", "18x18x16x4, 7x7x16x4", 4, 8, 376, (3, 96, 2, 4)),
    ("mobilenet-first", "18x18x16x4, 7x7x16x4", 4, 4, 188, (3, 96, 3, 4)),
    ("mobilenet-first", "16x16x4x4, 7x7x4x4", 4, 16, 1128, (3, 96, 1, 2)),
    ("mobilenet-first", "16x16x4x4, 7x7x4x4", 4, 8, 752, (3, 96, 2, 2)),
    ("mobilenet-first", "16x16x4x4, 7x7x4x4", 4, 4, 376, (3, 96, 3, 2)),
    ("mobilenet-last", "18x18x16x16, 7x7x16x16", 16, 16, 256, (3, 3, 16, 16)),
    ("mobilenet-last", "18x18x16x16, 7x7x16x16", 16, 8, 256, (3, 3, 16, 16)),
    ("mobilenet-last", "18x18x16x16, 7x7x16x16", 16, 4, 256, (3, 3, 16, 16)),
    ("mobilenet-last", "18x18x16x4, 7x7x16x4", 4, 16, 1024, (3, 3, 16, 4)),
    ("mobilenet-last", "18x18x16x4, 7x7x16x4", 4, 8, 1024, (3, 3, 16, 4)),
    ("mobilenet-last", "18x18x16x4, 7x7x16x4", 4, 4, 1024, (3, 3, 16, 4)),
]


def plm_limits(label, pe):
    """Table 5.1's PLM label ("IN-OUT dims, W dims") -> limits: each PLM holds the product of
    its listed dimensions (the reading under which every tile count reproduces)."""
    io, wt = (part.strip() for part in label.split(","))

    def product(text):
        out = 1
        for d in text.split("x"):
            out *= int(d)
        return out

    return ThesisLimits(plm_in=product(io.rsplit("x", 1)[0]), plm_w=product(wt),
                        plm_out=product(io.rsplit("x", 2)[0]) * int(io.rsplit("x", 1)[1]),
                        pe=pe)


def table_5_1(fixed=False):
    """[(row, layer, PLM label, PE, bits, expected tiles, expected tile, computed ConvTiles)]."""
    from ..workloads.seed_layers import THESIS_LAYERS

    rows = []
    for i, (name, label, pe, bits, tiles, tile) in enumerate(TABLE_5_1, 1):
        h, w, cin, cout, k = THESIS_LAYERS[name]
        got = get_tiling_conv(h, w, cin, cout, k, plm_limits(label, pe), bits, fixed=fixed)
        rows.append((i, name, label, pe, bits, tiles, tile, got))
    return rows
