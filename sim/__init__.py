"""Simulation support: Verilog caching, cocotb runners, formal and synthesis flows."""
