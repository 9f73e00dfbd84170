"""The fully-connected datapath of the accelerator socket (``hdl.fc.datapath``) and its
blocks: weight rows, PEs, core, loaders, the double-precision requantizer, the store."""
