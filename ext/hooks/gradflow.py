"""``GradFlow``: mean and max |grad| per parameter after each backward, as a table and a plot.

The statistics are taken by post-accumulate-grad hooks, i.e. from ``.grad`` once each backward
has accumulated into it, on ext and torch models alike.
"""

from __future__ import annotations

from typing import Any

from .trace import _render, note

__all__ = ["GradFlow"]


class GradFlow:
    """Watches the gradients of ``model``'s parameters (or of a dict name -> tensor).

    ``records`` holds one dict per backward seen: parameter name -> ``(mean |grad|,
    max |grad|)``. A backward is recognised by a parameter reporting a second time, so a
    backward that reaches only some parameters still starts a new record when one repeats.
    ``print(flow)`` shows the latest record as a table; ``flow.plot("grads.png")`` draws it.
    """

    def __init__(self, model: Any) -> None:
        if hasattr(model, "named_parameters"):
            named = dict(model.named_parameters())
        elif isinstance(model, dict):
            named = dict(model)
        else:
            raise TypeError("GradFlow(): model must be a module or a dict of name -> tensor, "
                            f"not {type(model).__name__}")
        self.params = {n: p for n, p in named.items() if p.requires_grad}
        self.records: list[dict[str, tuple[float, float]]] = []
        self.handles = [p.register_post_accumulate_grad_hook(self._hook(n))
                        for n, p in self.params.items()]

    def _hook(self, name: str):
        def grad_flow_hook(param):
            g = param.grad.detach().abs()
            if not self.records or name in self.records[-1]:
                self.records.append({})
            self.records[-1][name] = (float(g.mean()), float(g.max()) if g.numel() else 0.0)
            note("GradFlow", name)
        return grad_flow_hook

    @property
    def latest(self) -> dict[str, tuple[float, float]]:
        """The statistics of the latest backward (empty before the first)."""
        return self.records[-1] if self.records else {}

    def remove(self) -> None:
        """Remove the hooks (the records stay)."""
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def table(self, step: int = -1) -> Any:
        """Record ``step`` (default: the latest) as a ``rich.table.Table``."""
        from rich.table import Table

        record = self.records[step] if self.records else {}
        number = step % len(self.records) + 1 if self.records else 0
        table = Table(title=f"gradient flow (backward {number} of {len(self.records)})")
        table.add_column("parameter")
        table.add_column("shape")
        table.add_column("mean |grad|", justify="right")
        table.add_column("max |grad|", justify="right")
        for name, p in self.params.items():
            mean, peak = record.get(name, (None, None))
            table.add_row(name, str(tuple(p.shape)),
                          "-" if mean is None else f"{mean:.3e}",
                          "-" if peak is None else f"{peak:.3e}")
        return table

    def __str__(self) -> str:
        return _render(self.table())

    def plot(self, path: str | None = None, step: int = -1, title: str | None = None) -> Any:
        """Bars of max and mean |grad| per parameter (log scale), saved as PNG when ``path`` is
        given; returns the matplotlib Figure (drawn with the Agg canvas: no display needed)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        if not self.records:
            raise RuntimeError("GradFlow.plot(): no backward has been recorded yet")
        record = self.records[step]
        names = [n for n in self.params if n in record]
        means = [record[n][0] for n in names]
        peaks = [record[n][1] for n in names]
        fig = Figure(figsize=(max(6.0, 0.3 * len(names) + 2), 4.5))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        xs = range(len(names))
        floor = min([v for v in means + peaks if v > 0], default=1e-12) / 10
        ax.bar(xs, [max(v, floor) for v in peaks], color="tab:cyan", label="max |grad|")
        ax.bar(xs, [max(v, floor) for v in means], color="tab:blue", label="mean |grad|")
        ax.set_yscale("log")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=90, fontsize=7)
        ax.set_xlim(-0.75, len(names) - 0.25)
        ax.set_ylabel("|grad| (log scale)")
        ax.set_title(title or "gradient flow per parameter")
        ax.grid(True, axis="y", which="major", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, format="png", dpi=120)
        return fig
