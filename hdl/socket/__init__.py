"""The accelerator socket: what every datapath shares (list sequencer, read tracking,
performance counters) and the interface a datapath implements (:mod:`.signature`)."""
