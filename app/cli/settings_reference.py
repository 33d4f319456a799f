"""``xstreams settings``: the settings in force, and the reference page built from the model.

Without flags it prints every setting's value as ``xstreams serve`` would take it from the
environment (and defaults), secrets masked, so an operator sees what a start would use.
``--markdown`` writes docs/operations/settings.md: under each heading of ``serve --help``, a
table of flag, environment variable, default and meaning, all read from ``Settings``; a test
runs ``--check`` so the page never drifts from the model.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

import typer

from app.cli.generated import write_or_check
from app.cli.serve_options import OPTIONS, SECRETS, Option

__all__ = ["DOC", "markdown", "settings"]

DOC = Path("docs/operations/settings.md")
MASK = "***"

INTRO = """\
# Settings reference

<!-- Generated from app/settings.py by `xstreams settings --markdown`: edit the model, not
this page (`xstreams settings --markdown --check` fails when the two differ). -->

Every setting is a flag of `xstreams serve` and an environment variable. A flag given
overrides the variable, which overrides the default. `xstreams serve --help` lists the same
flags; `xstreams settings` prints the values in force (secrets masked).

Lists (`XSTREAMS_CORS_ORIGINS`, ...) take a JSON list in their variable (those of globs also
take globs separated by commas), and their flag once per item. Switches take `true` or
`false` in their variable, `--x` or `--no-x` on the command line.
"""


def _escape(text: str) -> str:
    """``text`` safe in a Markdown table cell: code spans kept, pipes escaped everywhere, and
    outside code the characters that would start emphasis or HTML escaped."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside code spans
        parts[i] = re.sub(r"([\\*_<>\[\]])", r"\\\1", parts[i])
    return "`".join(parts).replace("|", "\\|")


def _flag(option: Option) -> str:
    if option.kind == "flag":
        return f"`{option.flag}`, `--no-{option.flag[2:]}`"
    return f"`{option.flag}`"


def _default(option: Option) -> str:
    value = option.default
    return value if value in ("unset", "none") else f"`{value}`"


def markdown() -> str:
    """The reference page."""
    lines = [INTRO.rstrip("\n")]
    panel = None
    for option in OPTIONS:
        if option.panel != panel:
            panel = option.panel
            lines += [
                "",
                f"## {panel}",
                "",
                "| Flag | Environment variable | Default | Meaning |",
                "| --- | --- | --- | --- |",
            ]
        meaning = _escape(option.help)
        lines.append(f"| {_flag(option)} | `{option.envvar}` | {_default(option)} | {meaning} |")
    return "\n".join(lines) + "\n"


def _shown(option: Option, value: Any) -> str:
    """A value as printed, a secret's masked (and a URL's password)."""
    if value is None:
        return "unset"
    if option.field in SECRETS:
        return MASK
    if isinstance(value, str) and "://" in value:
        return _mask_password(value)
    return option.default_text(value)


def _mask_password(url: str) -> str:
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    netloc = parts.netloc.replace(f":{password}@", f":{MASK}@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def effective() -> list[tuple[str, str, str, str]]:
    """Each setting in force: its heading, its flag, its value as shown, and where it came
    from (the variable, or the default)."""
    from app.settings import Settings

    current = Settings()
    given = {name.upper() for name in os.environ}
    return [
        (
            o.panel,
            o.flag,
            _shown(o, getattr(current, o.field)),
            o.envvar if o.envvar in given else "default",
        )
        for o in OPTIONS
    ]


def _print_effective() -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("flag", no_wrap=True, style="cyan")
    table.add_column("value", overflow="fold")
    table.add_column("from", overflow="fold", style="dim")
    panel = None
    for heading, flag, value, source in effective():
        if heading != panel:
            if panel is not None:
                table.add_row("", "", "")
            panel = heading
            table.add_row(f"[bold]{heading}[/bold]", "", "")
        table.add_row(flag, value, source)
    Console(highlight=False).print(table)


def settings(
    markdown_page: Annotated[
        bool,
        typer.Option("--markdown", help=f"Write the reference page ({DOC}) instead."),
    ] = False,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where --markdown writes the page.")
    ] = DOC,
    check: Annotated[
        bool,
        typer.Option(help="With --markdown: only compare with the file; exit 1 if they differ."),
    ] = False,
) -> None:
    """Print the settings in force, or write the settings reference page.

    The values are what `xstreams serve` would take without flags: the XSTREAMS_*
    environment, else the defaults. Secrets are masked."""
    if not markdown_page:
        from pydantic import ValidationError

        try:
            _print_effective()
        except ValidationError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        return
    text = markdown()
    write_or_check(output, text, "xstreams settings --markdown", check=check)
