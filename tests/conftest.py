"""Test options shared by every test file."""


from sim.runner import SIMULATORS


def pytest_addoption(parser):
    parser.addoption("--sim", action="append", choices=SIMULATORS,
                     help="run cocotb tests on this simulator only (repeatable; default: all)")


def pytest_generate_tests(metafunc):
    if "sim" in metafunc.fixturenames:
        sims = metafunc.config.getoption("--sim") or list(SIMULATORS)
        metafunc.parametrize("sim", sims)
