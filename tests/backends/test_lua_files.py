"""The Redis backend's scripts as files (app/backends/redis/lua/): every one put together,
loaded by a real Redis, and holding nothing the loader should have replaced."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.backends.redis import lua
from app.backends.redis.lua import Reply
from tests.support import lua_lint

LUA = Path(lua.__file__).parent


def test_every_script_and_include_is_put_together_whole() -> None:
    """No include line or ``${NAME}`` is left, every include named exists, and the header
    (the file's leading comments) is not sent."""
    assert len(lua.names()) >= 25
    for name in lua.names():
        text = lua.script(name)
        assert "--@include" not in text and "${" not in text, name
        header = (LUA / f"{name}.lua").read_text().split("\n")[0]
        assert header.startswith("-- ") and header not in text, name
    for path in (LUA / "includes").glob("*.lua"):
        assert lua.include(path.stem).strip(), path


def test_an_include_is_one_file_for_every_script_that_uses_it() -> None:
    """The group helpers exist once (includes/lua_helpers.lua) and every script that needs
    them gets the same text."""
    helpers = lua.include("lua_helpers")
    users = [n for n in lua.names() if "--@include lua_helpers" in (LUA / f"{n}.lua").read_text()]
    assert len(users) >= 5
    for name in users:
        assert lua.script(name).startswith(helpers), name
    assert sum(1 for p in LUA.rglob("*.lua") if "local function full(" in p.read_text()) == 1


def test_reply_codes_come_from_one_table() -> None:
    """The codes Python reads by name are the numbers the scripts return."""
    values = lua.constants()
    assert values["RAN"] == "1" and values["NO_GROUP"] == values["REFUSED"] == "0"
    assert "return {1, reply}" in lua.script("full_info")
    assert f"return {{{int(Reply.TOO_MANY)}}}" in lua.script("full_info")
    assert f"return {{{int(Reply.CYCLE)}}}" in lua.script("policy")
    placeholders = {
        m[1] for p in LUA.rglob("*.lua") for m in re.finditer(r"\$\{([A-Z_]+)\}", p.read_text())
    }
    assert placeholders <= values.keys()
    assert {"RAN", "REFUSED", "NO_GROUP", "TOO_MANY", "ASK_AGAIN", "CYCLE"} <= placeholders


def test_a_real_redis_compiles_every_script(real_redis: Any) -> None:
    for name in lua.names():
        sha = real_redis.script_load(lua.script(name))
        assert real_redis.script_exists(sha) == [True], name


@pytest.mark.skipif(shutil.which("luacheck") is None, reason="luacheck is not installed")
def test_the_lint_finds_a_mistake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """make lint's luacheck passes the scripts, and fails one that reads an undefined global
    (a misspelt local), so a clean run means something."""
    assert lua_lint.main() == 0
    monkeypatch.setattr(lua, "names", lambda: ["probe"])
    monkeypatch.setattr(lua, "for_lint", lambda name: "return redis.call('GET', KEYZ[1])\n")
    assert lua_lint.main() != 0
    assert subprocess.run(["luacheck", "--version"], capture_output=True).returncode == 0
