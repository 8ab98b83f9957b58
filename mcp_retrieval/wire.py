"""JSON text from a client that the SDK's parser refuses but Python's accepts: a lone UTF-16
surrogate escape (`"\\ud800"`). pydantic's JSON parser rejects it, and the SDK's stdio and SSE
transports then drop the request without a reply, leaving the client waiting forever. Invalid
UTF-8 bytes already reach the server as U+FFFD (the stdio transport decodes with `replace`);
a lone surrogate is treated the same way: replaced with U+FFFD, and the request is answered.
"""

from __future__ import annotations

import json
import re

import mcp_types  # the SDK's message types: its stdio and SSE transports look the adapter up here

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile(r"[\ud800-\udfff]")


def without_lone_surrogates(text: str | bytes) -> str | None:
    """The JSON text with every lone surrogate replaced by U+FFFD, or None when it holds none
    (or is not JSON at all: the SDK's own error stands)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not _SURROGATE_ESCAPE.search(text):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None

    def fix(v):
        if isinstance(v, str):
            return _LONE.sub("\ufffd", v.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, dict):
            return {fix(k): fix(x) for k, x in v.items()}
        return v

    return json.dumps(fix(value))


class _Lenient:
    """The SDK's message adapter, retried once on text whose lone surrogates were replaced."""

    def __init__(self, adapter):
        self._adapter = adapter

    def validate_json(self, data, *args, **kwargs):
        try:
            return self._adapter.validate_json(data, *args, **kwargs)
        except ValueError:
            fixed = without_lone_surrogates(data)
            if fixed is None:
                raise
            return self._adapter.validate_json(fixed, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._adapter, name)


def accept_lone_surrogates() -> None:
    """Install the lenient adapter where the stdio and SSE transports look it up (idempotent)."""
    if not isinstance(mcp_types.jsonrpc_message_adapter, _Lenient):
        mcp_types.jsonrpc_message_adapter = _Lenient(mcp_types.jsonrpc_message_adapter)
