"""`tandem sim`: an honest stand-in for model providers, on loopback.

A real HTTP server (starlette + uvicorn) that speaks OpenAI's Chat Completions, Completions and Responses
APIs and Anthropic's Messages API, streaming included (the Responses API over a WebSocket too), at the
speed of a chosen profile, with faults on demand. Given truth files it answers with the text that really
follows the prompt's prefix; without them it answers with filler that says it is simulated. Every
response carries `x-tandem-simulated: true` and model ids like `sim-spark`.

    __main__.py           `python -m tandem.sim`, the same as `tandem sim`
    settings.py           SimSettings, speed profiles, fault kinds
    runner.py             serve_forever, start_in_thread (SimHandle), command-line options
    state.py              one running simulator's state: settings, truth, armed faults, counters
    app.py                routes and the outer ASGI layer
    openai_common.py      what the OpenAI-shaped endpoints share: field parsing, errors, SSE, usage
    openai_chat.py        POST /v1/chat/completions
    openai_completions.py POST /v1/completions (FIM)
    openai_responses.py   POST /v1/responses
    responses_ws.py       the Responses API's WebSocket mode (GET /v1/responses, upgraded)
    anthropic.py          POST /v1/messages (Anthropic's Messages API)
    control.py            GET /v1/models and the /_sim/ control API
    request_log.py        each generation request's body as it arrived, for tests to read
    respond.py            faults, pacing and streaming, shared by every API
    prompt_reading.py     the simulator's own reading of a completion request
    prompt_cache.py       simulated prompt caching: cached tokens and a shorter time to first token
    answers.py            what is answered: truth continuation or filler, stop strings, max_tokens
    truth.py              the truth index
    error_model.py        when and how the simulated model is wrong
    local_errors.py       the local profiles' completion mistakes, fitted to the real Qwen2.5-Coder models
    edit_reading.py       the simulator's own reading of an edit request, and applying an answer
    edits.py              edit prompts answered with SEARCH/REPLACE blocks from the edit truth
    edit_mistakes.py      what a wrong edit answer looks like
    next_edit.py          next-edit prompts answered with the region rewritten as the truth has it
    pacing.py             tokens paced by the clock
    faults.py             armed faults and the counters of /_sim/stats
    tokens.py             tiktoken counting and splitting
"""

from __future__ import annotations

from tandem.sim.runner import (
    SimConfigError,
    SimHandle,
    SimSettings,
    add_arguments,
    main,
    serve_forever,
    settings_from_args,
    start_in_thread,
)

__all__ = [
    "SimConfigError",
    "SimHandle",
    "SimSettings",
    "add_arguments",
    "main",
    "serve_forever",
    "settings_from_args",
    "start_in_thread",
]
