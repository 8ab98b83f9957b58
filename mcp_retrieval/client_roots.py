"""Roots an MCP client offers (the roots capability, deprecated by the 2026-07-28 protocol in favour
of tool arguments and configuration): a convenience for older clients, never the only way.

Used only when the server was started without `--root` and without a configuration file, over
stdio (one client, one workspace: over HTTP one client's folders would replace another's). Before
a tool call the client's `roots/list` is read once, and again after `notifications/roots/
list_changed`; its `file://` folders become the workspace's roots (new ones indexed alone, the
others closed). A client that fails or is slow to answer leaves the roots as they are.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from urllib.parse import unquote, urlparse

import anyio

from mcp_retrieval.roots import too_wide

log = logging.getLogger("mcp_retrieval")

LIST_TIMEOUT_S = 5.0


def folders(uris: list[str]) -> list[Path]:
    """Existing local folders among `file://` URIs, in order, without repeats."""
    out: list[Path] = []
    for uri in uris:
        parsed = urlparse(uri)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            continue
        path = Path(unquote(parsed.path))
        try:
            path = path.resolve()
        except OSError:
            continue
        if path.is_dir() and path not in out:
            out.append(path)
    return out


class ClientRoots:
    def __init__(self, workspace):
        self.workspace = workspace
        self._stale = True  # list at the first call, and after every list_changed

    def changed(self) -> None:
        self._stale = True

    async def sync(self, ctx) -> None:
        caps = ctx.client_capabilities if ctx is not None else None
        if not self._stale or caps is None or caps.roots is None:
            return
        self._stale = False
        try:
            with warnings.catch_warnings(), anyio.fail_after(LIST_TIMEOUT_S):
                warnings.simplefilter("ignore")  # the capability is deprecated, and still what old clients offer
                result = await ctx.session.list_roots()
        except Exception as exc:
            log.warning("client roots unavailable (%s); keeping %s", type(exc).__name__, ", ".join(self.workspace.engines))
            return
        wide = {f: too_wide(f) for f in folders([str(r.uri) for r in result.roots])}
        for folder, what in wide.items():
            if what:
                log.warning("client root %s is %s: not indexed", folder, what)
        found = [f for f, what in wide.items() if not what]
        if not found:
            return
        added = await anyio.to_thread.run_sync(self.workspace.adopt, found)
        log.warning("client roots: %s (new: %s)", ", ".join(self.workspace.engines), ", ".join(added) or "none")
