"""The report of one run: the markdown table and the generated section of bench/PIPELINE.md
it replaces between the markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MARK_START = "<!-- figures:start (written by python -m bench.pipeline) -->"
MARK_END = "<!-- figures:end -->"


def _n(x: float) -> str:
    return f"{x:,.0f}"


def markdown(figures: dict[str, Any]) -> str:
    """The table of one run: Spark reads beside their anchors, loads and archive runs."""
    cells = figures["cells"]
    cfg = figures["config"]
    m = figures.get("machine", {})
    base = cells.get("spark_p1", {}).get("rate") or 0.0
    one = cells.get("http_1", {}).get("rate") or 0.0
    lines = [
        f"Run {figures['started']}{' (--quick)' if cfg['quick'] else ''}: "
        f"{cfg['entries']:,} entries, page size {cfg['page_size']}, local[2], "
        f"{m.get('cpus', '?')} cores, load average at start {m.get('load_average_at_start')} "
        f"and at end {figures.get('load_average_at_end')} (1/5/15 min); server mode "
        f"{figures.get('server_mode', '?')}. Reads: median of {cfg['rounds']} after "
        f"{cfg['warmups']} warm-up, [min–max].",
        "",
        "| read | entries/s | [min–max] | seconds | vs Spark p=1 | vs anchor a "
        "| server cores | client cores | machine busy cores |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, c in cells.items():
        vs1 = f"{c['rate'] / base:.2f}x" if base and key.startswith("spark") else ""
        vsa = f"{c['rate'] / one:.0%}" if one else ""
        lines.append(
            f"| {c['label']} | {_n(c['rate'])} | {_n(c['rate_min'])}–{_n(c['rate_max'])} "
            f"| {c['seconds']:.2f} | {vs1} | {vsa} | {c['server_cores']:.2f} "
            f"| {c['client_cores']:.2f} | {c['machine_cores']:.2f} |"
        )
    lines += [
        "",
        "server cores: the xstreams process (redis-server for anchor c); client cores: this "
        "process tree (driver, Spark JVM, Python workers, anchor readers); machine busy cores: "
        "all of /proc/stat, including anyone else's work.",
        "",
        "| job | entries | seconds | entries/s | phases (s) | server cores | client cores "
        "| machine busy cores |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for name, ld in figures["load"].items():
        lines.append(f"| load {name} (batches of 1000) | {ld['entries']:,} | {ld['seconds']:.1f} "
                     f"| {_n(ld['rate'])} | | | | |")  # fmt: skip
    for a in figures["archive"]:
        phases = ", ".join(f"{k} {v:.1f}" for k, v in a["phases_s"].items())
        trimmed = f", trimmed {a['trimmed']:,}" if a["trim"] else ""
        lines.append(
            f"| {a['label']} (partitions {a['partitions']}, "
            f"{len(a['date_partitions'])} date folders{trimmed}) | {a['rows']:,} "
            f"| {a['seconds']:.1f} | {_n(a['rate'])} | {phases} | {a['server_cores']:.2f} "
            f"| {a['client_cores']:.2f} | {a['machine_cores']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def update_report(path: Path, table: str) -> None:
    """Replace the generated section of bench/PIPELINE.md, keeping the prose around it."""
    block = f"{MARK_START}\n{table}{MARK_END}"
    if path.exists():
        text = path.read_text()
        if MARK_START in text and MARK_END in text:
            head, rest = text.split(MARK_START, 1)
            tail = rest.split(MARK_END, 1)[1]
            path.write_text(head + block + tail)
            return
        path.write_text(text.rstrip("\n") + "\n\n" + block + "\n")
        return
    path.write_text("# Pipeline benchmark\n\n## Latest figures\n\n" + block + "\n")
