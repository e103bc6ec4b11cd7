"""The composition root of the model side: one `Session` per server.

It owns what the features share, and builds each feature once over them:

    shared     tiers (the configured models, one read path each), the gate (what may leave the machine),
               the tracer, the speculation token budget, the day's spend, the workspace index, the
               router's cached git reads
    features   inline (`inline.engine.Engine`), next_edits (`next_edit.suggest.NextEdits`),
               edits (`edit.service.Edits`)

Configuration reaches all of them in one place, `configure(config) -> problems`; the LSP edge holds one
`Session` and asks it, never the features' parts.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
from collections.abc import Callable, Mapping

import httpx

from tandem.cache.edit_history import EditHistory
from tandem.cache.tokens import read_cache_through
from tandem.completion.config.tree import Config
from tandem.completion.edit.flow import EditFlow
from tandem.completion.edit.service import Edits
from tandem.completion.gate import Gate
from tandem.completion.inline.engine import Engine
from tandem.completion.inline.prefetch import TokenBudget
from tandem.completion.inline.prompts import warm_request
from tandem.completion.machine.tokenizer_files import verified_copy
from tandem.completion.next_edit.suggest import DocumentLookup, NextEdits
from tandem.completion.observe.spend import SpendLedger
from tandem.completion.observe.trace import Tracer
from tandem.completion.providers.breaker import Notice
from tandem.completion.providers.tiers import Tiers
from tandem.completion.routing.inputs import RouterInputsCache
from tandem.completion.workspace import WorkspaceIndex


class Session:
    def __init__(
        self,
        *,
        config: Config,
        client: httpx.AsyncClient,
        tracer: Tracer,
        documents: DocumentLookup,
        history: EditHistory,
        workspace: WorkspaceIndex | None = None,
        env: Mapping[str, str] | None = None,
        spend_path: pathlib.Path | None = None,
    ) -> None:
        self.config = config
        self.client = client
        # tiktoken's cache is read through the door (cache/ reads no files itself).
        read_cache_through(verified_copy)
        self.tracer = tracer
        self.workspace = workspace
        # The workspace's gate when there is one (it knows the ignore files and the open documents' verdicts).
        self.gate = workspace.gate if workspace is not None else Gate()
        self.tiers = Tiers(client, env if env is not None else os.environ)
        # What speculation may spend: completions' prefetch and next edits count against it.
        self.budget = TokenBudget(per_minute=config.prefetch.tokens_per_minute)
        # The day's spend against `[budget]`, fed by every trace record (kept at `spend_path` across restarts).
        self.spend = SpendLedger(config.budget, path=spend_path)
        tracer.sinks.append(self.spend.record)
        # The router's git reads, cached per file and HEAD, started when a document is opened or saved.
        self.router_inputs = RouterInputsCache()
        self.inline = Engine(
            config=config,
            tiers=self.tiers,
            tracer=tracer,
            budget=self.budget,
            spend=self.spend,
            gate=self.gate,
            workspace=workspace,
        )
        self.next_edits = NextEdits(
            tiers=self.tiers,
            tracer=tracer,
            budget=self.budget,
            config=config,
            documents=documents,
            history=history,
            workspace=workspace,
            spend=self.spend,
        )
        self.edits = Edits(
            EditFlow(models=self.tiers, tracer=tracer, config=config, gate=self.gate), router_inputs=self.router_inputs
        )

    def configure(self, config: Config) -> list[str]:
        """Adopt a configuration (once after construction, then on every change); returns problems to show,
        such as an unusable provider."""
        self.config = config
        self.budget.per_minute = config.prefetch.tokens_per_minute
        self.spend.limits = config.budget
        self.inline.configure(config)
        self.next_edits.configure(config)
        self.edits.flow.config = config
        self.tiers.fallback = config.completion.fallback_to_accurate
        return self.tiers.configure(config.models)

    def on_notice(self, listener: Callable[[Notice], None]) -> None:
        """Where a model's outage and recovery are announced (once each)."""
        self.tiers.listener = listener

    async def warm(self) -> None:
        """Open connections to the configured providers before the first keystroke needs them."""
        await self.tiers.warm(warm_request())

    def document_opened(self, uri: str) -> None:
        """A document was opened or saved: start the git reads an edit in it would route with (no wait)."""
        self._warm_router_inputs(uri)

    def edit_offered(self, uri: str, first_line: int, end_line: int) -> None:
        """An edit of lines [first_line, end_line) was offered (a code action): start their history's read too,
        so that an edit the user then picks, while typing its instruction, does not wait for it."""
        self._warm_router_inputs(uri, (first_line, end_line))

    def _warm_router_inputs(self, uri: str, lines: tuple[int, int] | None = None) -> None:
        workspace = self.workspace
        if workspace is not None and workspace.root is not None and uri.startswith("file:"):
            self.router_inputs.warm(workspace.root, workspace.relative(uri), lines)

    def document_closed(self, uri: str) -> None:
        self.inline.document_closed(uri)
        self.next_edits.document_closed(uri)

    async def aclose(self) -> None:
        """Stop every stream (each writes its trace record as it ends), close the models, flush the traces."""
        await asyncio.gather(self.next_edits.aclose(), self.inline.aclose())
        await self.tiers.aclose()
        self.tracer.close()
        self.spend.close()
