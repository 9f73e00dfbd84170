"""The FC benchmark's derived figures (``sw.fc_bench``): bus efficiency, bus ceiling and the
note naming the layers the bus cannot carry at the target."""

from hls_ref.precision import Precision
from sw.fc_bench import FCBenchCase, bound_note


def case(layer, weight_bytes, bytes_read, cycles, batch=1):
    return FCBenchCase("autoencoder", layer, Precision.A8W8, batch, None, weight_bytes,
                       result={"cycles": cycles, "bytes_read": bytes_read, "mac_cycles": 0})


def test_ceiling_and_efficiency():
    c = case("04_fully_connected", 1024, 1264, 224)
    assert c.bus_ceiling == 1024 / 1264
    assert c.bus_efficiency == 1024 / (224 * 8)


def test_bound_note_names_only_layers_below_the_target():
    cases = [case("01_fully_connected", 16384, 17104, 2204),
             case("04_fully_connected", 1024, 1264, 224),
             case("05_fully_connected", 1024, 1624, 270, batch=8)]
    note = bound_note(cases)
    assert "04_fully_connected at a8w8: 1,024 weight bytes of 1,264 read, ceiling 81.0%" in note
    assert "01_fully_connected" not in note and "05_fully_connected" not in note
    assert "at least 90%" in bound_note(cases[:1])
