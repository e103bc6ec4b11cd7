"""workspace/didChangeConfiguration: the client's settings layer replaced, the configuration resolved again
and handed to the session (its models warmed anew); what is wrong with it is shown to the user."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer


def did_change_configuration(ls: TandemServer, params: types.DidChangeConfigurationParams) -> None:
    ls.sources.set_did_change(params.settings)
    config, problems = ls.sources.resolve()
    ls.config = config
    messages = [str(p) for p in problems]
    if ls.session is not None:
        messages += ls.session.configure(config)
        ls.spawn(ls.session.warm())
    report(ls, messages)


def report(ls: TandemServer, messages: list[str]) -> None:
    """Configuration problems (and the workspace scan's), each shown to the user once."""
    for message in messages:
        ls.notify_user(f"tandem configuration: {message}", types.MessageType.Warning)
