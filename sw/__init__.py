"""Software: the tessera command line, compilers and benchmarks."""
