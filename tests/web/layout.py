"""What "fits at 390 px" means, as one script a test runs on a page: the problems it finds.

- The page never scrolls sideways, and no table frame needs scrolling to show a column.
- No table, cell, heading, fact or name has content wider than its box, unless it is a name
  ellipsised on purpose with its full text in its ``title`` (one hover or long press away).
- No text in a heading, cell or fact breaks to a new line inside a word: a line may end only
  after a space or a separator (``-``, ``:``, ``.``, ``_``, ``/``, ``·``, ``,``), measured
  character by character with ``Range.getClientRects``.
- No name element is styled to break anywhere (``word-break: break-all``,
  ``overflow-wrap: anywhere / break-word``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FIT_CHECK = (Path(__file__).parent / "fit_check.js").read_text()


def misfits(page: Any) -> list[str]:
    """Every way the page shown does not fit its viewport (FIT_CHECK); empty when it fits."""
    problems: list[str] = page.evaluate(FIT_CHECK)
    return problems
