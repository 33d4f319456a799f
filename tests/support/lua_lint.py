"""luacheck over the Redis backend's scripts as Redis runs them (``make lint``).

Each script is put together with its includes (``lua.for_lint``) and checked whole, so a
helper is checked where it is used; the configuration is the project's .luacheckrc.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from app.backends.redis import lua

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name in lua.names():
            path = Path(folder) / f"{name}.lua"
            path.write_text(lua.for_lint(name))
            paths.append(str(path))
        done = subprocess.run(
            ["luacheck", "--config", str(ROOT / ".luacheckrc"), "--no-color", *paths],
            check=False,
        )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
