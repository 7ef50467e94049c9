"""How a runtime takes push-notification callbacks from A2A agents (specs/a2a.md §3)."""

from __future__ import annotations

from dataclasses import dataclass

from xflow_runtime.a2a.callbacks import call_token, secret_bytes


@dataclass(frozen=True)
class A2ASettings:
    """``callback_url`` is the public base URL of the service that receives callbacks (``xflow
    serve`` answers ``POST <callback_url>/a2a/callbacks/<instance>/<call>``); ``callback_secret``
    (≥ 32 bytes) derives each call's token: the same secret must be given after a restart, or the
    callbacks of calls made before it are refused (the wait then falls back on polling).
    Without both, ``aiagentproxy`` never uses push mode (its default becomes poll)."""

    callback_url: str | None = None
    callback_secret: str | bytes | None = None

    def __post_init__(self) -> None:
        if self.callback_secret is not None:
            secret_bytes(self.callback_secret)  # too short: refused at construction, not at the first call

    @property
    def push_ready(self) -> bool:
        return bool(self.callback_url) and self.callback_secret is not None

    def callback(self, instance_id: str, call_id: str) -> tuple[str, str]:
        """(URL, token) of one call's callback."""
        assert self.callback_url is not None and self.callback_secret is not None
        token = call_token(secret_bytes(self.callback_secret), instance_id, call_id)
        return f"{self.callback_url.rstrip('/')}/a2a/callbacks/{instance_id}/{call_id}", token
