"""INFO and CONFIG GET / SET / RESETSTAT / HELP: the operations commands.

INFO reports what the engine knows (blocked clients, command and error counts, keys) and what
the service supplies through ``Keyspace.info`` (the process, memory, the database), in
Redis's sections and words, so tools that read INFO (the Redis test suite's
``blocked_clients``, dashboards) find their fields.
"""

from __future__ import annotations

from app.engine import config
from app.engine.commands.table import Access, Flag, command, container, every_key
from app.engine.keyspace import InfoFields, Keyspace
from app.engine.replies import OK, Help, Info, InfoSection, Status

R, W = Flag.READONLY, Flag.WRITE

REDIS_VERSION = "7.0.15"  # the redis-server whose stream semantics the engine follows

# Every section, in INFO's order, with its title; "default" and "all" select among them.
SECTIONS = {
    "server": "Server",
    "clients": "Clients",
    "memory": "Memory",
    "persistence": "Persistence",
    "stats": "Stats",
    "replication": "Replication",
    "cpu": "CPU",
    "commandstats": "Commandstats",
    "errorstats": "Errorstats",
    "cluster": "Cluster",
    "keyspace": "Keyspace",
}
DEFAULT = frozenset(SECTIONS) - {"commandstats"}


def _selected(argv: list[str]) -> set[str]:
    """INFO's arguments (``genInfoSectionDict``): none is ``default``; ``all`` and
    ``everything`` are every section; names are case-insensitive, unknown ones ignored."""
    if len(argv) == 1:
        return set(DEFAULT)
    chosen: set[str] = set()
    for arg in argv[1:]:
        name = arg.lower()
        if name in ("all", "everything"):
            chosen |= set(SECTIONS)
        elif name == "default":
            chosen |= DEFAULT
        elif name in SECTIONS:
            chosen.add(name)
    return chosen


def _fields(ks: Keyspace, name: str) -> InfoFields:
    """The engine's own fields of section ``name``, then the service's."""
    fields: InfoFields = []
    if name == "server":
        uptime_s = max(ks.clock.now_ms() - ks.started_ms, 0) // 1000
        fields += [
            ("redis_version", REDIS_VERSION),
            ("redis_mode", "standalone"),
            ("uptime_in_seconds", uptime_s),
            ("uptime_in_days", uptime_s // 86400),
        ]
    elif name == "clients":
        fields.append(("blocked_clients", ks.blocked.count()))
    elif name == "stats":
        fields += [
            ("total_commands_processed", ks.stats.total_commands_processed),
            ("total_error_replies", ks.stats.total_error_replies),
        ]
    elif name == "replication":
        fields += [("role", "master"), ("connected_slaves", 0)]
    elif name == "commandstats":
        for cmd, s in sorted(ks.stats.commands.items()):
            per_call = s.usec / s.calls if s.calls else 0.0
            fields.append(
                (
                    f"cmdstat_{cmd}",
                    f"calls={s.calls},usec={s.usec},usec_per_call={per_call:.2f},"
                    f"rejected_calls={s.rejected_calls},failed_calls={s.failed_calls}",
                )
            )
    elif name == "errorstats":
        fields += [
            (f"errorstat_{code}", f"count={n}") for code, n in sorted(ks.stats.errors.items())
        ]
    elif name == "cluster":
        fields.append(("cluster_enabled", 0))
    elif name == "keyspace" and ks.streams:
        fields.append(("db0", f"keys={len(ks.streams)},expires=0,avg_ttl=0"))
    source = ks.info.get(name)
    if source is not None:
        fields += source()
    return fields


def info(ks: Keyspace, argv: list[str]) -> Info:
    chosen = _selected(argv)
    return Info(
        [
            InfoSection(title, _fields(ks, name))
            for name, title in SECTIONS.items()
            if name in chosen
        ]
    )


# INFO shows the whole keyspace (its size, every client): a command over every key.
command("info", -1, R, keys=every_key)(info)

container("config")

CONFIG_HELP = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "HELP",
    "    Prints this help.",
]


@command("config|get", -3, R, access=Access.ADMIN)
def _config_get(ks: Keyspace, argv: list[str]) -> list[str]:
    out: list[str] = []
    for name, p in config.matching(argv[2:]):
        out += [name, str(ks.config.get(p.name))]
    return out


# Journaled, and it changes how every stream grows: a write over every key (ADMIN).
@command("config|set", -4, W, keys=every_key)
def _config_set(ks: Keyspace, argv: list[str]) -> Status:
    ks.configure(config.parse_set(argv[2:]))
    return OK


@command("config|resetstat", 2, R, access=Access.ADMIN)
def _config_resetstat(ks: Keyspace, argv: list[str]) -> Status:
    ks.stats.reset()
    return OK


@command("config|help", 2, R)
def _config_help(ks: Keyspace, argv: list[str]) -> Help:
    return Help(CONFIG_HELP)
