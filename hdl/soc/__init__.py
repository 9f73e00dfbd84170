"""The system on chip: a Minerva RV32IM processor, on-chip RAM, a UART, a system controller
and Tessera's accelerators sharing external memory (``docs/soc.md``)."""
