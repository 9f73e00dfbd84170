# amaranth: UnusedElaboratable=no
"""Formal proofs of the ST multiplier (SymbiYosys + Yices) and the exact decomposition checks."""

import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import Out

import hdl.st_multiplier
from hls_ref import Precision
from sim import proofs
from sim.formal import prove

pytestmark = pytest.mark.formal


def _tier(name):
    """The one-block build's proofs of the three-configuration build run in the slow tier (the
    five-configuration build's cover the same plan in the CI tier)."""
    return pytest.param(name, marks=pytest.mark.slow) if name.startswith("st_low_dsp1") else name


@pytest.mark.parametrize("name", [_tier(name) for name in proofs.all_proofs()])
def test_smt_proof(name, tmp_path):
    factory, options = proofs.all_proofs()[name]
    result = prove(name, factory(), workdir=tmp_path, **options)
    assert result.passed, result.log[-3000:]


@pytest.mark.parametrize("precision", list(Precision))
def test_decomposition_identity(precision):
    assert proofs.check_decomposition(precision, precision.product_bits) == []


def test_proof_catches_a_wrong_sign_extension(tmp_path, monkeypatch):
    real_plan = hdl.st_multiplier._nibble_plan

    def plan_with_unsigned_top_nibble(precision):
        signed_a, signed_b, used, shift = real_plan(precision)
        if precision is Precision.A8W8:
            signed_a = signed_a - {3}
        return signed_a, signed_b, used, shift

    monkeypatch.setattr(hdl.st_multiplier, "_nibble_plan", plan_with_unsigned_top_nibble)
    result = prove("planted_bug", proofs.STDecompositionSpec(Precision.A8W8),
                   workdir=tmp_path, flatten=False)
    assert result.status == "FAIL"


def test_proof_catches_a_dropped_product(tmp_path, monkeypatch):
    real_plan = hdl.st_multiplier._nibble_plan

    def plan_without_one_pair(precision):
        signed_a, signed_b, used, shift = real_plan(precision)
        if precision is Precision.A16W16:
            used = used - {(1, 2)}
        return signed_a, signed_b, used, shift

    monkeypatch.setattr(hdl.st_multiplier, "_nibble_plan", plan_without_one_pair)
    result = prove("planted_bug", proofs.STDecompositionSpec(Precision.A16W16),
                   workdir=tmp_path, flatten=False)
    assert result.status == "FAIL"


def _wrong_decomposition(monkeypatch, change):
    real = proofs.nibble_decomposition

    def wrong(precision):
        weights, signed_a, signed_b = real(precision)
        return change(dict(weights), set(signed_a), set(signed_b))

    monkeypatch.setattr(proofs, "nibble_decomposition", wrong)


def test_identity_check_catches_an_unsigned_top_nibble(monkeypatch):
    _wrong_decomposition(monkeypatch, lambda w, sa, sb: (w, sa - {3}, sb))
    failures = proofs.check_decomposition(Precision.A8W8, 17)
    assert failures == ["bits [15:8] are not their nibble sum"]


def test_identity_check_catches_a_misweighted_product(monkeypatch):
    _wrong_decomposition(monkeypatch, lambda w, sa, sb: ({**w, (2, 1): w[(2, 1)] + 4}, sa, sb))
    assert proofs.check_decomposition(Precision.A16W16, 32) == [
        "coefficients of the decomposition differ from the specification"]


def test_identity_check_catches_a_dropped_product(monkeypatch):
    _wrong_decomposition(monkeypatch, lambda w, sa, sb: (
        {key: value for key, value in w.items() if key != (0, 3)}, sa, sb))
    assert proofs.check_decomposition(Precision.A4W4, 10) == [
        "coefficients of the decomposition differ from the specification"]


@pytest.mark.parametrize("precision", list(Precision))
def test_byte_decomposition_identity(precision):
    assert proofs.check_byte_decomposition(precision, precision.product_bits) == []


def _wrong_units(change):
    """``byte_units`` with ``change(precision, slots)`` applied to every configuration."""
    real = hdl.st_multiplier.byte_units
    return lambda precisions: {p: change(p, list(slots)) for p, slots in real(precisions).items()}


def _flip_a_sign(precision, slots):
    if precision is Precision.A8W8:
        (a_lsb, a_width, _), b_piece, weight = slots[1]
        slots[1] = ((a_lsb, a_width, False), b_piece, weight)
    return slots


def _misweigh(precision, slots):
    if precision is Precision.A16W16:
        a_piece, b_piece, weight = slots[2]
        slots[2] = (a_piece, b_piece, weight + 8)
    return slots


@pytest.mark.parametrize(("precision", "change"), [(Precision.A8W8, _flip_a_sign),
                                                   (Precision.A16W16, _misweigh)])
def test_dsp_proof_catches_a_planted_bug(tmp_path, monkeypatch, precision, change):
    # only the hardware sees the wrong plan: the harness keeps its own reference
    monkeypatch.setattr(hdl.st_multiplier, "byte_units", _wrong_units(change))
    result = prove("planted_bug", proofs.STUnitsSpec(precision), workdir=tmp_path)
    assert result.status == "FAIL"


def test_byte_identity_check_catches_a_wrong_assignment(monkeypatch):
    monkeypatch.setattr(proofs, "byte_units", _wrong_units(_misweigh))
    assert proofs.check_byte_decomposition(Precision.A16W16, 32) == [
        "the DSP units do not compute each piece once at its weight"]


@pytest.mark.parametrize("precision", list(Precision))
def test_wide_units_identity(precision):
    assert proofs.check_wide_units(precision, precision.product_bits) == []


_REAL_WIDE_UNITS = hdl.st_multiplier.wide_units


def _drop_a_lane(precisions):
    """``wide_units`` whose a8w8 plan leaves its second lane out."""
    plan = dict(_REAL_WIDE_UNITS(precisions))
    plan[Precision.A8W8] = [plan[Precision.A8W8][0], None]
    return plan


def _raw_read_out(product, shift):
    """A pair's read-out that forgets the cross term's borrow."""
    return product[shift:2 * shift].as_signed()


@pytest.mark.parametrize(("precision", "name", "wrong"), [
    (Precision.A8W8, "wide_units", _drop_a_lane),
    (Precision.A4W4, "pair_shift", lambda a_width, b_width: 8),
    (Precision.A4W4, "unpack_pair", _raw_read_out),
], ids=["dropped_lane", "narrow_pair_offset", "no_borrow"])
def test_dsp2_proof_catches_a_planted_bug(tmp_path, monkeypatch, precision, name, wrong):
    # only the hardware sees the wrong plan or read-out: the harness keeps its own
    monkeypatch.setattr(hdl.st_multiplier, name, wrong)
    result = prove("planted_bug", proofs.STWideUnitsSpec(precision), workdir=tmp_path)
    assert result.status == "FAIL"


def test_wide_identity_check_catches_a_wrong_plan_or_read_out(monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(proofs, "wide_units", _drop_a_lane)
        assert proofs.check_wide_units(Precision.A8W8, 17) == [
            "the units do not compute each lane once"]
    with monkeypatch.context() as patch:
        patch.setattr(proofs, "pair_shift", lambda a_width, b_width: 8)
        assert proofs.check_wide_units(Precision.A4W4, 10) == [
            "a packed pair's read-out is not the pair's sum"]
    with monkeypatch.context() as patch:
        patch.setattr(proofs, "_pair_sum", lambda product, shift: (product >> shift) & 0x1FF)
        assert proofs.check_wide_units(Precision.A4W4, 10) == [
            "a packed pair's read-out is not the pair's sum"]


@pytest.mark.parametrize("precision", list(Precision))
def test_hybrid_units_identity(precision):
    assert proofs.check_hybrid_units(precision, precision.product_bits) == []


def _wrong_lane_nibbles(change):
    """``_lane_nibbles`` with ``change(lanes, plan)`` applied to the plan of every lane set."""
    real = hdl.st_multiplier._lane_nibbles
    return lambda lanes: change(lanes, real(lanes))


def _unsigned_top_a_nibble(lanes, plan):
    signed_a, signed_b, used, shift = plan
    return signed_a - {3}, signed_b, used, shift


def _shift_off_by_four(lanes, plan):
    signed_a, signed_b, used, shift = plan
    return signed_a, signed_b, used, shift + (4 if len(lanes) == 2 else 0)


@pytest.mark.parametrize(("precision", "change"), [(Precision.A8W8, _unsigned_top_a_nibble),
                                                   (Precision.A4W4, _shift_off_by_four)],
                         ids=["unsigned_top_nibble", "misweighted_pair"])
def test_dsp1_proof_catches_a_planted_bug(tmp_path, monkeypatch, precision, change):
    # only the hardware's LUT unit sees the wrong plan: the harness keeps its own
    monkeypatch.setattr(hdl.st_multiplier, "_lane_nibbles", _wrong_lane_nibbles(change))
    result = prove("planted_bug", proofs.STHybridUnitsSpec(precision), workdir=tmp_path)
    assert result.status == "FAIL"


def test_hybrid_identity_check_catches_a_wrong_decomposition(monkeypatch):
    real = proofs.lane_decomposition

    def unsigned_top(lanes):
        weights, signed_a, signed_b = real(lanes)
        return weights, signed_a - {3}, signed_b

    monkeypatch.setattr(proofs, "lane_decomposition", unsigned_top)
    assert proofs.check_hybrid_units(Precision.A8W8, 17) == ["bits [15:8] are not their nibble sum"]


def test_identity_check_catches_a_narrow_result():
    assert proofs.check_decomposition(Precision.A16W16, 31) == ["results do not fit 31 bits"]


class _ForgetfulSource(wiring.Component):
    """A stream source that withdraws its offer after one cycle whether taken or not."""

    o: Out(stream.Signature(8))

    def elaborate(self, platform):
        m = Module()
        m.d.sync += [self.o.valid.eq(~self.o.valid), self.o.payload.eq(self.o.payload + 1)]
        return m


def test_stream_contract_proof_catches_a_withdrawn_offer(tmp_path):
    result = prove("planted_bug", proofs.StreamContractSpec(_ForgetfulSource),
                   workdir=tmp_path, mode="prove", depth=4)
    assert result.status == "FAIL"
