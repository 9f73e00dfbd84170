# Tessera: every command a user or CI needs. `make help` lists them.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Re-install when pyproject.toml changes; otherwise `make setup` is a no-op check.
STAMP  := $(VENV)/.installed-$(shell sha256sum pyproject.toml 2>/dev/null | cut -c1-12)

SIM     ?= icarus
DEVICE  ?= ecp5-85f
BLOCK   ?=
BOARD   ?= ulx3s-85f
CLOCK_MHZ ?=
TESTS   ?=
SEED    ?=
WAVES   ?= 0
JOBS    ?= 2
MARK    ?= cocotb and not slow

export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Tests treat every warning as an error (pytest's filterwarnings does the same).
STRICT := PYTHONWARNINGS=error
ifneq ($(SEED),)
export TESSERA_SEED := $(SEED)
endif
export WAVES

.PHONY: help setup icarus test test-full sim formal synth synth-report bitstream lint bench demo clean

help:
	@echo "make setup        create .venv, install pinned dependencies (and Icarus), print versions"
	@echo "make demo         the main job: whole MLPerf Tiny models on the RTL SoC checked against"
	@echo "                  LiteRT, ST multiplier/PE row, golden models vs TFLite, a ResNet-8"
	@echo "                  layer on the conv2d accelerator, synthesis table"
	@echo "make test         CI tier: unit, Amaranth-sim, cocotb (Icarus + Verilator), formal"
	@echo "make test-full    everything, with long random regressions and synthesis"
	@echo "make sim SIM=icarus|verilator [TESTS=...] [SEED=n] [WAVES=1]   cocotb tests"
	@echo "make formal       SymbiYosys proofs"
	@echo "make synth [BLOCK=...] [DEVICE=ecp5-85f|ice40-up5k]   Yosys + nextpnr table"
	@echo "make synth-report synthesise the standard blocks and rewrite docs/results.md"
	@echo "make bitstream [BOARD=ulx3s-85f|icebreaker] [CLOCK_MHZ=40]   the SoC's bitstream and timing report"
	@echo "make bench        cycle benchmarks from simulation -> docs/results.md"
	@echo "make lint         ruff"

setup: $(STAMP) icarus
	@$(PY) -m sim.doctor

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev,peer]"
	@rm -f $(VENV)/.installed-*
	@touch $@

icarus:
	@if ! command -v iverilog >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Icarus Verilog with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog; \
	  else \
	    echo "Icarus Verilog is missing. Install it with: sudo apt-get install iverilog"; \
	    exit 1; \
	  fi; \
	fi

test: setup
	$(STRICT) $(PY) -m pytest -n $(JOBS) -m "not slow" --durations=25 $(TESTS)

test-full: setup
	$(STRICT) $(PY) -m pytest -n $(JOBS) $(TESTS)
	$(PY) -m boards.synth

sim: setup
	$(STRICT) $(PY) -m pytest -n $(JOBS) -m "$(MARK)" --sim $(SIM) $(TESTS)

formal: setup
	$(STRICT) $(PY) -m sim.proofs -j $(JOBS)

synth: setup
	$(PY) -m boards.synth $(BLOCK) --device $(DEVICE)

bitstream: setup
	$(PY) -m boards.bitstream --board $(BOARD) $(if $(CLOCK_MHZ),--clock-mhz $(CLOCK_MHZ))

synth-report: setup
	$(PY) -m boards.synth --write-results

lint: setup
	$(PY) -m ruff check .

bench: setup
	$(VENV)/bin/tessera bench --write-results
	$(PY) -m sw.tiling.results --write --plot docs/img/traffic_vs_ocm.png

demo: setup
	$(VENV)/bin/tessera demo

clean:
	rm -rf build .pytest_cache
