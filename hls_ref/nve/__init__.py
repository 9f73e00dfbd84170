"""The Neuro Vector Engine (seed 003): ISA, numerics, instruction-set simulator, golden layers."""
