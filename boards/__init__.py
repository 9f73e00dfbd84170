"""FPGA boards and out-of-context synthesis of Tessera cores (Yosys + nextpnr)."""
