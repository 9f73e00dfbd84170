"""Text descriptions of NVE networks: the seed's layer fields, one line per layer.

The seed's code generator reads a network as XML ``layerDescriptor`` elements (seed 003,
Appendix A): the output size, the (merged) kernel, the subsampling step and the connection
table (``outNet``). ``tessera nve compile FILE`` reads the same fields from a text file::

    # LeNet-5 on a 32 x 32 image (C1 and S2 merged, as the seed merges conv + subsample)
    network lenet5
    input 1 32 32                                   # maps, height, width
    layer C1S2 out 14x14 kernel 6x6 subsample 2x2 maps 6 connect all
    layer C3S4 out 5x5 kernel 6x6 subsample 2x2 maps 16 connect 0,1,2 1,2,3 2,3,4 3,4,5 ...
    layer C5 out 1x1 kernel 5x5 maps 120 connect all

Each ``layer`` line: a name, then keywords in any order: ``out HxW`` (output map size),
``kernel KHxKW``, ``subsample SHxSW`` (the stride; default 1x1), ``maps N`` (output maps),
``connect`` followed by ``all`` (every output map reads every input map), ``one-to-one``
(map m reads input m) or one comma-separated list of input maps per output map, and
optionally ``pad T,B,L,R``. Without ``pad`` the layer reads its input from the top-left
corner and the bottom/right padding makes the padded input span exactly
``(out - 1) * subsample + kernel``: negative where the layer leaves trailing rows or columns
unread, positive where it needs zeros (as :mod:`sw.workloads.nve_networks` does for the seed's
networks). A layer's input is the previous layer's output (the first layer's, ``input``).
``#`` starts a comment. Errors name the line.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from hls_ref.nve.layers import NveLayer

from .errors import NveCompileError

__all__ = ["NetworkFile", "parse_network", "read_network"]

_SIZE = re.compile(r"^(\d+)x(\d+)$")


@dataclass(frozen=True)
class NetworkFile:
    """A parsed description: ``name`` and ``layers`` (``{name: NveLayer}`` in order)."""

    name: str
    layers: dict


class _LineError(ValueError):
    pass


def _size(text, what):
    match = _SIZE.match(text)
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise _LineError(f"{what} must be HxW with positive integers, not {text!r}")
    return int(match.group(1)), int(match.group(2))


def _integer(text, what):
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise _LineError(f"{what} must be a positive integer, not {text!r}")
    return int(text)


def _connections(tokens, maps, in_maps):
    if tokens == ["all"]:
        return [list(range(in_maps)) for _ in range(maps)]
    if tokens == ["one-to-one"]:
        if maps != in_maps:
            raise _LineError(f"connect one-to-one needs as many output maps as input maps "
                             f"({in_maps}), not {maps}")
        return [[m] for m in range(maps)]
    if len(tokens) != maps:
        raise _LineError(f"connect lists {len(tokens)} output maps, the layer has {maps} "
                         f"(or use all / one-to-one)")
    table = []
    for m, token in enumerate(tokens):
        try:
            inputs = [int(x) for x in token.split(",")]
        except ValueError:
            raise _LineError(f"connect entry {m} must be input maps separated by commas, "
                             f"not {token!r}") from None
        table.append(inputs)
    return table


def _layer(tokens, in_shape):
    try:
        return _parse_layer(tokens, in_shape)
    except _LineError as error:
        prefix = f"layer {tokens[0]}: "
        if str(error).startswith(prefix):
            raise
        raise _LineError(prefix + str(error)) from None


def _parse_layer(tokens, in_shape):
    name, rest = tokens[0], tokens[1:]
    fields, connect = {}, None
    k = 0
    while k < len(rest):
        key = rest[k]
        if key == "connect":
            connect = rest[k + 1:]
            break
        if key not in ("out", "kernel", "subsample", "maps", "pad") or k + 1 >= len(rest):
            raise _LineError(f"layer {name}: expected out, kernel, subsample, maps, pad or "
                             f"connect, not {key!r}")
        if key in fields:
            raise _LineError(f"layer {name}: {key} given twice")
        fields[key] = rest[k + 1]
        k += 2
    missing = [key for key in ("out", "kernel", "maps") if key not in fields]
    if missing or not connect:
        missing += [] if connect else ["connect"]
        raise _LineError(f"layer {name}: missing {', '.join(missing)}")
    out_h, out_w = _size(fields["out"], "out")
    kernel_h, kernel_w = _size(fields["kernel"], "kernel")
    stride_h, stride_w = _size(fields.get("subsample", "1x1"), "subsample")
    maps = _integer(fields["maps"], "maps")
    in_maps, in_h, in_w = in_shape
    if "pad" in fields:
        try:
            pad = tuple(int(x) for x in fields["pad"].split(","))
        except ValueError:
            pad = ()
        if len(pad) != 4:
            raise _LineError(f"layer {name}: pad must be T,B,L,R, not {fields['pad']!r}")
    else:
        pad = (0, (out_h - 1) * stride_h + kernel_h - in_h, 0,
               (out_w - 1) * stride_w + kernel_w - in_w)
    try:
        layer = NveLayer(in_maps, in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h,
                         stride_w, _connections(connect, maps, in_maps), pad)
    except ValueError as error:
        raise _LineError(f"layer {name}: {error}") from None
    return name, layer


def parse_network(text, source="<text>"):
    """The :class:`NetworkFile` of a description; :class:`~.errors.NveCompileError`
    ``source:line: message`` on an error."""
    name, shape, layers = None, None, {}
    for number, raw in enumerate(text.splitlines(), 1):
        tokens = raw.split("#", 1)[0].split()
        if not tokens:
            continue
        try:
            keyword, args = tokens[0], tokens[1:]
            if keyword == "network":
                if len(args) != 1 or name is not None:
                    raise _LineError("network NAME, once")
                name = args[0]
            elif keyword == "input":
                if len(args) != 3 or shape is not None:
                    raise _LineError("input MAPS HEIGHT WIDTH, once, before the layers")
                shape = tuple(_integer(a, "input") for a in args)
            elif keyword == "layer":
                if shape is None:
                    raise _LineError("a layer before the input line")
                if not args:
                    raise _LineError("layer NAME ...")
                if args[0] in layers:
                    raise _LineError(f"layer {args[0]} defined twice")
                previous = list(layers.values())[-1] if layers else None
                in_shape = shape if previous is None else (previous.out_maps, previous.out_h,
                                                          previous.out_w)
                layer_name, layer = _layer(args, in_shape)
                layers[layer_name] = layer
            else:
                raise _LineError(f"unknown keyword {keyword!r} (network, input, layer)")
        except _LineError as error:
            raise NveCompileError(f"{source}:{number}: {error}") from None
    if not layers:
        raise NveCompileError(f"{source}: no layer")
    return NetworkFile(name or Path(source).stem, layers)


def read_network(path):
    """:func:`parse_network` of the file ``path``."""
    path = Path(path)
    return parse_network(path.read_text(), str(path))
