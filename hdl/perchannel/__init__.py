"""The per-channel datapath (docs/perchannel.md): depthwise convolution, average pooling, add."""
