"""Amaranth HDL cores: sum-together multipliers, processing elements and accelerators."""
