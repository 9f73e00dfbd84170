"""``tessera run --backend rtl --plot FILE``: per-layer cycles (bars, by engine) and the
accelerator layers' MAC utilisation (dots) of an RTL run."""

__all__ = ["plot_layers"]


def plot_layers(image, run, path):
    """Draw ``run`` (``sw.soc_run.ModelRun``) of ``image`` into ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .soc_run import layer_multipliers

    names = [layer.name for layer in image.layers]
    cycles = [r.cycles or 0 for r in run.records]
    colours = ["tab:blue" if layer.accelerator is not None else "tab:orange"
               for layer in image.layers]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(names)), 4.2))
    ax.bar(range(len(names)), cycles, color=colours)
    ax.set_yscale("log")
    ax.set_ylabel("cycles (log)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=70, ha="right", fontsize=7)
    util = ax.twinx()
    xs, ys = [], []
    for i, (layer, r) in enumerate(zip(image.layers, run.records)):
        units = layer_multipliers(image, layer) if layer.accelerator is not None else 0
        if units and r.cycles and layer.macs:
            xs.append(i)
            ys.append(100 * layer.macs / (r.cycles * units))
    util.plot(xs, ys, "o", color="tab:green")
    util.set_ylim(0, 100)
    util.set_ylabel("accelerator MAC utilisation (%)")
    handles = [plt.Rectangle((0, 0), 1, 1, color="tab:blue"),
               plt.Rectangle((0, 0), 1, 1, color="tab:orange"),
               plt.Line2D([], [], marker="o", color="tab:green", linestyle="")]
    ax.legend(handles, ["accelerator", "processor", "utilisation"], fontsize=7,
              loc="upper right")
    ax.set_title(f"{image.model} on the RTL SoC: {run.cycles:,} cycles")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
