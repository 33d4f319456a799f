"""The storage schema as SQLAlchemy Core tables: the models Alembic's migrations must match.

Names carry an ``xstreams_`` prefix so the tables can share a PostgreSQL database or schema
with others. Times are integer milliseconds (``*_ms``), like every time in xstreams.

Every journal row and snapshot carries the CRC-32 (``zlib.crc32``, unsigned) of its stored
bytes, computed by the writer and verified on load, so a byte changed after the commit (a
damaged disk, a hand edit) stops recovery instead of being served. CRC-32 is C code in the
standard library that runs at gigabytes per second and drops the GIL on large buffers: it
catches accidental damage, not deliberate forgery (whoever can edit a row can fix its CRC).
"""

from __future__ import annotations

import zlib

from sqlalchemy import BigInteger, Column, Integer, LargeBinary, MetaData, String, Table, Text

metadata = MetaData()

# SQLite makes an INTEGER PRIMARY KEY the rowid itself (no second index); BIGINT elsewhere.
_Seq = BigInteger().with_variant(Integer(), "sqlite")

# One row per group commit (or per GROUP_MAX_RECORDS of it): the records seq..last_seq.
# Records are numbered by the writer in append order, contiguously, so a gap between rows
# means lost records. A row per group, not per record, keeps the database's work per commit
# and recovery's per-row cost independent of how many writes a group carries.
journal = Table(
    "xstreams_journal",
    metadata,
    Column("seq", _Seq, primary_key=True, autoincrement=False),
    Column("last_seq", BigInteger, nullable=False),
    # A JSON array of records; a record is one write command's effects (app.engine.effects),
    # each in its stored form (app.engine.codec).
    Column("records", LargeBinary, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("checksum", BigInteger, nullable=False),  # checksum(records)
)

snapshots = Table(
    "xstreams_snapshots",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    # The state after every record with seq <= covers_seq; recovery replays the later ones.
    Column("covers_seq", BigInteger, nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("checksum", BigInteger, nullable=False),  # checksum(data)
)

# API keys (``xstreams keys``): only a hash of each secret; revoked keys stay, for the record.
api_keys = Table(
    "xstreams_api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("secret_hash", String(64), nullable=False),
    # The grant as JSON: {"read": [globs], "consume": [...], "write": [...], "admin": bool}.
    Column("grant_json", Text, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=True),
    Column("revoked_at_ms", BigInteger, nullable=True),
    # The key's own limits as JSON (app/access/rates.py), or NULL: the settings' defaults.
    Column("limits_json", Text, nullable=True),
    # The key's tenant prefix (app/access/prefix.py), or NULL: none.
    Column("prefix", String(200), nullable=True),
)

meta = Table(
    "xstreams_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(256), nullable=False),
)

# What the rows above hold; recovery refuses a database written in another format.
RECORD_FORMAT = "4"
GROUP_MAX_RECORDS = 5000


def checksum(data: bytes) -> int:
    """The CRC-32 stored beside a journal row's records or a snapshot's data."""
    return zlib.crc32(data)
