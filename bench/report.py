"""Turn a run's figures (the JSON ``python -m bench`` writes) into the Markdown table, the
targets verdict and the PNG chart.

Kept apart from the measuring so a table can be rebuilt from an old JSON, and so the test can
check it without starting a server. A row whose anchor cell is missing from the figures is an
error, not an empty cell: a table that silently lost its redis-server or ceiling column would
read as a result when it is a failed run.

bench/REPORT.md is part hand-written (how to reproduce, the profile findings) and part
generated: only the text between the two ``FIGURES_*`` markers is replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FIGURES_START = "<!-- figures:start (written by python -m bench) -->"
FIGURES_END = "<!-- figures:end -->"


class MissingFigure(ValueError):
    """A row names a cell the figures do not have."""


def _cell(figures: dict[str, Any], key: str | None, row: dict[str, Any]) -> dict[str, Any] | None:
    if key is None:
        return None
    try:
        return figures["cells"][key]  # type: ignore[no-any-return]
    except KeyError:
        raise MissingFigure(f"row {row['label']!r}: no figures for cell {key!r}") from None


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _spread(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "—"
    if len(cell["samples"]) == 1:
        return _num(cell["median"])
    return f"{_num(cell['median'])} [{_num(cell['min'])}–{_num(cell['max'])}]"


def _ratio(a: dict[str, Any], b: dict[str, Any] | None) -> float | None:
    return float(a["median"] / b["median"]) if b and b["median"] else None


def verdict(
    row: dict[str, Any],
    xs: dict[str, Any],
    bare: dict[str, Any] | None,
    baseline: dict[str, Any] | None = None,
    redis: dict[str, Any] | None = None,
) -> str:
    """'met' or 'missed', with the measured value beside the target. ``baseline``: the cell
    a ``baseline_ratio`` target compares with (the same request without the feature);
    ``redis``: the anchor a ``redis_ratio`` target compares with (a time: at most that many
    times redis-server's)."""
    target = row.get("target")
    if not target:
        return ""
    value, kind = target["value"], target["kind"]
    figure = target.get("figure", "median")  # or "p99_ms": judged on the p99 of the cell
    if figure != "median":
        xs = {**xs, "median": xs[figure]}
    if kind == "ceiling_ratio":
        ratio = _ratio(xs, bare)
        if ratio is None:
            raise MissingFigure(f"row {row['label']!r}: a ceiling target needs a ceiling")
        ok, got, want = ratio >= value, f"{ratio:.0%} of ceiling", f"≥ {value:.0%}"
        short = f"{value / ratio:.1f}x short" if not ok else ""
    elif kind == "baseline_ratio":
        ratio = _ratio(xs, baseline)
        if ratio is None:
            raise MissingFigure(f"row {row['label']!r}: a baseline target needs its baseline")
        ok, got, want = ratio >= value, f"{ratio:.0%} of the rate without it", f"≥ {value:.0%}"
        short = f"{value / ratio:.2f}x short" if not ok else ""
    elif kind == "redis_ratio":
        ratio = _ratio(xs, redis)
        if ratio is None:
            raise MissingFigure(f"row {row['label']!r}: a redis target needs redis's figure")
        ok, got, want = ratio <= value, f"{ratio:.2f}x redis-server", f"≤ {value:g}x"
        short = f"{ratio / value:.2f}x over" if not ok else ""
    elif kind == "min":
        ok, got, want = xs["median"] >= value, _num(xs["median"]), f"≥ {_num(value)}"
        short = f"{value / xs['median']:.1f}x short" if not ok else ""
    else:
        ok, got, want = xs["median"] <= value, _num(xs["median"]), f"≤ {_num(value)}"
        got = got if figure == "median" else f"{figure.removesuffix('_ms')} {got}"
        short = f"{xs['median'] / value:.1f}x over" if not ok else ""
    return f"{'met' if ok else '**missed**'}: {got} (target {want}){', ' + short if short else ''}"


def target_text(row: dict[str, Any]) -> str:
    """The row's target in a few characters ("≥ 70% of ceiling", "p99 ≤ 5.00"), or "—"."""
    target = row.get("target")
    if not target:
        return "—"
    value, kind = target["value"], target["kind"]
    if kind == "ceiling_ratio":
        return f"≥ {value:.0%} of ceiling"
    if kind == "baseline_ratio":
        return f"≥ {value:.0%} of the row without it"
    if kind == "redis_ratio":
        return f"≤ {value:g}x redis"
    text = f"{'≥' if kind == 'min' else '≤'} {_num(value)}"
    figure = target.get("figure", "median")
    return text if figure == "median" else f"{figure.removesuffix('_ms')} {text}"


TAIL_FACTOR = 3.0


def tail_verdicts(resolved: list[dict[str, Any]]) -> list[str]:
    """One table line per row whose xstreams cell and ceiling both have a p99."""
    out = []
    for r in resolved:
        xs, _, bare = r["cells"]
        mine, ceiling = xs.get("p99_ms"), bare.get("p99_ms") if bare else None
        if mine is None or not ceiling:
            continue
        ratio = mine / ceiling
        ok = ratio <= TAIL_FACTOR
        verdict = "met" if ok else f"**missed**, {ratio / TAIL_FACTOR:.1f}x over"
        tails = [c.get("p999_ms") if c else None for c in (xs, bare)]
        mine9, ceiling9 = ("—" if t is None else f"{t:.2f}" for t in tails)
        out.append(
            f"| {r['label']} | {mine:.2f} | {ceiling:.2f} | {ratio:.1f}x | {verdict}"
            f" | {mine9} | {ceiling9} |"
        )
    return out


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """Each row with its cells resolved and ratios computed; raises MissingFigure."""
    out = []
    for row in figures["rows"]:
        xs = _cell(figures, row["xstreams"], row)
        assert xs is not None  # every row has an xstreams cell (schema, not input)
        redis = _cell(figures, row["redis"], row)
        bare = _cell(figures, row["bare"], row)
        baseline = _cell(figures, (row.get("target") or {}).get("baseline"), row)
        out.append(
            {
                **row,
                "cells": (xs, redis, bare),
                "vs_bare": _ratio(xs, bare),
                "vs_redis": _ratio(xs, redis),
                "verdict": verdict(row, xs, bare, baseline, redis),
            }
        )
    return out


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}" if value >= 0.01 else f"{value:.1%}"


def markdown(figures: dict[str, Any]) -> str:
    """The figures table, the latency and load-generator tables, the targets and the machine."""
    resolved = rows(figures)
    cfg, machine = figures["config"], figures["machine"]
    lines = [
        f"Run {figures['started']} ({'--quick' if cfg['quick'] else 'full'}): "
        f"{cfg['rounds']} interleaved rounds of {cfg['seconds']:g} s per cell; "
        "median [min–max] over rounds.",
        "",
        "| workload | unit | xstreams | redis-server | bare ceiling | xstreams/ceiling "
        "| xstreams/redis | target |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in resolved:
        xs, redis, bare = r["cells"]
        lines.append(
            f"| {r['label']} | {r['unit']} | {_spread(xs)} | {_spread(redis)} | {_spread(bare)} "
            f"| {_pct(r['vs_bare'])} | {_pct(r['vs_redis'])} | {target_text(r)} |"
        )
    lines += ["", "Targets (issues 7, 13, 29 and 37):", "", "| workload | verdict |", "|---|---|"]
    lines += [f"| {r['label']} | {r['verdict']} |" for r in resolved if r["verdict"]]
    tails = tail_verdicts(resolved)
    if tails:
        lines += [
            "",
            f"Tail latency (issue 13: the p99 of every row ≤ {TAIL_FACTOR:g}x the p99 of its bare "
            "ceiling, same run):",
            "",
            "| workload | xstreams p99 ms | ceiling p99 ms | ratio | verdict | xstreams p99.9 ms"
            " | ceiling p99.9 ms |",
            "|---|---:|---:|---:|---|---:|---:|",
            *tails,
        ]
    lines += [
        "",
        "Latency (median over rounds of each round's percentile) and CPU, per cell:",
        "",
        "| cell | p50 ms | p99 ms | p99.9 ms | server cores | load generator cores (max) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for cell in figures["cells"].values():
        p50 = "—" if cell["p50_ms"] is None else f"{cell['p50_ms']:.2f}"
        p99 = "—" if cell["p99_ms"] is None else f"{cell['p99_ms']:.2f}"
        # (older result files have no p99.9; redis-benchmark's CSV gives none)
        p999 = "—" if cell.get("p999_ms") is None else f"{cell['p999_ms']:.2f}"
        srv = "—" if cell["server_cpu_median"] is None else f"{cell['server_cpu_median']:.2f}"
        lines.append(
            f"| {cell['label']} | {p50} | {p99} | {p999} | {srv} | {cell['client_cpu_max']:.2f} |"
        )
    lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in machine.items())]
    lines += [f"Note: {note}" for note in figures.get("notes", [])]
    return "\n".join(lines) + "\n"


def chart(figures: dict[str, Any], path: Path) -> None:
    """One small panel per row: xstreams, redis-server and ceiling bars in the row's unit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    resolved = rows(figures)
    ncols = 3
    nrows = (len(resolved) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 2.8 * nrows), squeeze=False)
    colors = ("#d62728", "#1f77b4", "#7f7f7f")
    for ax, r in zip(axes.flat, resolved, strict=False):
        names, values, errs = [], [], []
        for name, cell in zip(("xstreams", "redis", "ceiling"), r["cells"], strict=True):
            if cell is not None:
                names.append(name)
                values.append(cell["median"])
                errs.append([cell["median"] - cell["min"], cell["max"] - cell["median"]])
        ax.bar(names, values, color=colors[: len(names)],
               yerr=list(zip(*errs, strict=True)), capsize=3)  # fmt: skip
        ax.set_title(r["label"], fontsize=7)
        ax.set_ylabel(r["unit"], fontsize=7)
        ax.set_yscale("log")
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(resolved) :]:
        ax.axis("off")
    fig.suptitle(f"xstreams beside redis-server and the bare ceiling ({figures['started']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def update_report(report: Path, table: str) -> None:
    """Replace the generated part of REPORT.md, keeping the hand-written text around it."""
    block = f"{FIGURES_START}\n{table}{FIGURES_END}"
    if not report.exists():
        report.write_text(f"# Benchmarks\n\n{block}\n")
        return
    text = report.read_text()
    if FIGURES_START not in text or FIGURES_END not in text:
        raise ValueError(f"{report} lacks the figures markers; add them where the table goes")
    head, rest = text.split(FIGURES_START, 1)
    tail = rest.split(FIGURES_END, 1)[1]
    report.write_text(head + block + tail)
