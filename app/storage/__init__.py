"""Durability through SQLAlchemy: journal of effects, group commit, snapshots, recovery.

Modules: ``tables`` (the schema), ``database`` (engine set-up and statements), ``migrate``
(Alembic), ``writer`` (the journal sink and group commit), ``snapshots``, ``recovery``,
``service`` (``Storage``, the lifecycle the app wires). Imports the engine, never the API.

Errors: ``app.durability.StorageUnavailable`` (a write cannot be made durable now: 503) and
``RecoveryError`` (the stored state cannot be loaded exactly: the service stops).
"""

from app.storage.recovery import Recovered, RecoveryError
from app.storage.service import Storage

__all__ = ["Recovered", "RecoveryError", "Storage"]
