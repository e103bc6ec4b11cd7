"""A model request, once the first has been made, imports nothing: an import that fails is a search of
sys.path every time it is tried (httpcore tries `import sniffio` four times per request, and without sniffio
installed that was 0.4 ms of CPU per keystroke)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import subprocess
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

from tandem.completion.config.tree import ModelConfig
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.backends.openai_chat import OpenAIChatBackend
from tandem.completion.providers.http import make_client
from tandem.sim.runner import SimHandle


class _Watch(importlib.abc.MetaPathFinder):
    """Notes every module this thread looks for that is not already imported; finds nothing itself."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.sought: list[str] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if threading.get_ident() == self.thread:
            self.sought.append(fullname)
        return None


async def test_a_model_request_after_the_first_looks_for_no_module(spark_sim: SimHandle) -> None:
    request = ModelRequest(messages=(("user", "def add(a, b):\n    return "),), max_tokens=16)
    async with make_client() as client:
        backend = OpenAIChatBackend(ModelConfig(base_url=spark_sim.base_url, model="sim-spark", max_tokens=16), client)
        first = [text async for text in backend.stream(request, StreamStats())]
        watch = _Watch()
        sys.meta_path.insert(0, watch)
        try:
            again = [text async for text in backend.stream(request, StreamStats())]
        finally:
            sys.meta_path.remove(watch)
    assert first and again
    assert watch.sought == []


def test_the_server_loads_the_websocket_library_only_for_a_model_that_asks_for_it() -> None:
    """The WebSocket client (1.6 MB resident) serves only `transport = "websocket"`: a fresh interpreter that
    imports the server and makes an HTTP backend has not loaded it; a WebSocket backend loads it."""
    script = (
        "import sys, httpx\n"
        "import tandem.cli, tandem.lsp.server\n"
        "from tandem.completion.config.tree import ModelConfig\n"
        "from tandem.completion.providers.backends.factory import make_backend\n"
        "client = httpx.AsyncClient()\n"
        "make_backend(ModelConfig(base_url='http://127.0.0.1:1/v1', model='m'), client)\n"
        "before = any(name.split('.')[0] == 'websockets' for name in sys.modules)\n"
        "make_backend(ModelConfig(base_url='http://127.0.0.1:1/v1', model='m', provider='openai-responses',\n"
        "                         transport='websocket'), client)\n"
        "print(before, 'websockets' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr
