"""One randomized differential run: generated commands sent to both servers, each reply
compared, and after every write every read of the keys it changed (``checks.read_all``).

The run's history is the commands in order, with a ``("CHECK", key)`` marker where the reads
of ``key`` ran, so a saved run replays exactly (``test_random_sequences replay``). A failure
of any kind — a reply that differs, or an exception inside the engine — ends the run with
a message that names the seed, profile and step, and writes the history to a JSON file.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ReplyError
from tests.differential.checks import read_all
from tests.differential.exact import ExactPair
from tests.differential.generator import Command, Generator, touched

CHECK = "CHECK"
# Writes whose reply 0 says they changed nothing. (Not XTRIM: it may drop a node holding
# only deleted entries and answer 0.)
NO_OP_WHEN_ZERO = frozenset({"XDEL", "XACK", "DEL"})


def walk(
    pair: ExactPair,
    gen: Generator,
    steps: int,
    every_step: bool = True,
    reads: Callable[[ExactPair, str], Any] = read_all,
) -> tuple[list[Command], str | None]:
    """Runs ``steps`` commands of ``gen`` on ``pair``; returns the history and what failed
    (None when every reply was equal). The reads (``reads``) run after each write, or with
    ``every_step=False`` (over HTTP, where each read is a request) once at the end."""
    history: list[Command] = []
    try:
        for _ in range(steps):
            cmd = gen.next_command(pair.resp)
            history.append(cmd)
            reply = pair(*cmd)
            gen.observe(cmd, reply)
            if not every_step or isinstance(reply, ReplyError):
                continue  # (refused alike: nothing changed)
            if reply == 0 and cmd[0] in NO_OP_WHEN_ZERO:
                continue
            for key in touched(cmd):
                history.append((CHECK, key))
                reads(pair, key)
        if not every_step:
            for key in gen.keys:
                history.append((CHECK, key))
                reads(pair, key)
    except Exception as e:  # an engine exception too: the seed must be printed
        return history, describe(e)
    return history, None


def step(pair: ExactPair, cmd: Command) -> None:
    """One history entry: a command compared, or the reads a ``CHECK`` marker stands for."""
    if cmd[0] == CHECK:
        read_all(pair, cmd[1])
    else:
        pair(*cmd)


def describe(error: BaseException) -> str:
    """``ExactPair``'s assertion payload is ``(args, expected, actual)``: spell it out."""
    payload = error.args[0] if error.args else None
    if isinstance(error, AssertionError) and isinstance(payload, tuple) and len(payload) == 3:
        args, expected, actual = payload
        return f"  command:  {list(args)!r}\n  redis:    {expected!r}\n  xstreams: {actual!r}"
    return "".join(traceback.format_exception(error))


def as_json(cmds: Sequence[Command]) -> str:
    """A JSON array with one command per line (readable, and loadable by ``replay``)."""
    lines = ",\n".join(json.dumps(list(c), ensure_ascii=False) for c in cmds)
    return f"[\n{lines}\n]\n"


def report(
    history: Sequence[Command], failure: str, directory: Path, label: str, replay: str
) -> Any:
    """Fails the test: where the run went wrong, the file holding it, how to run it again."""
    slug = "".join(c if c.isalnum() else "-" for c in label)
    path = directory / f"random-sequence-{slug}.json"
    path.write_text(as_json(history))
    pytest.fail(
        f"{label} step={len(history) - 1} command={list(history[-1])!r}\n{failure}\n"
        f"sequence written to {path}\nrun it again: {replay}\nshrink it: "
        f"python -m tests.differential.test_random_sequences minimize {path}",
        pytrace=False,
    )
