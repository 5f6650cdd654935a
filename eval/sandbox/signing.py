"""HMAC over the worker's result: the parent believes only results signed with its per-run key."""

from __future__ import annotations

import hashlib
import hmac


def sign(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def verify(key: bytes, payload: str, mac: str) -> bool:
    return hmac.compare_digest(sign(key, payload), mac)
