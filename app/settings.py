"""Service settings, read once by the app factory or the CLI (env prefix ``XSTREAMS_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything an operator can set; each field has an ``XSTREAMS_<NAME>`` variable."""

    model_config = SettingsConfigDict(env_prefix="XSTREAMS_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = Path("./data")
    # Bearer token required by every request when set; None leaves the service open.
    token: str | None = None
    # Redis's stream-node-max-entries / stream-node-max-bytes: they decide which whole
    # blocks approximate trimming (`~`) can drop, so they must match Redis to match its replies.
    stream_node_max_entries: int = 100
    stream_node_max_bytes: int = 4096
    # Largest request body accepted by the command endpoint, in bytes.
    max_body_bytes: int = 16 * 1024 * 1024
    log_level: str = "info"
