"""A completion's prompt, in the shape the tier's API takes: `completion_request`.

A chat model is asked for the missing middle only: the file is shown with a hole marker at the cursor,
and the model must answer with the text that fills the hole (`chat_messages`; what it answers is cleaned
by `inline.answer`). A completions API (`fim`) is given the code before and after the cursor as a fill, or,
for a local model with a FIM template, the whole prompt in the template's layout (`inline.local_prompt`).

`split_chat_prompt` reads the layout back (tests check what was sent with it). The simulator has its own
reading of the layout (`tandem.sim.prompt_reading`), so that a change here is noticed by the contract tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.completion.providers.backends import fim_templates
from tandem.completion.providers.backends.base import ModelRequest

if TYPE_CHECKING:
    from tandem.completion.config.tree import ModelConfig

HOLE = "<|tandem:hole|>"
_OPEN = "<|tandem:file|>"
_CLOSE = "<|tandem:end|>"

SYSTEM_PROMPT = (
    "You are a code completion engine. The user sends a file with exactly one hole marked "
    f"{HOLE}. Reply with only the code that belongs in the hole: no explanation, no code fences, "
    "no repetition of the code before or after the hole. Reply with nothing if nothing belongs there."
)


# How a completion's prompt sent as an edit of the previous one ends (`ModelRequest.follow_up`).
FOLLOW_UP = "Then fill the hole in the changed code, answering as before (your previous answer no longer applies)."


def completion_request(
    config: ModelConfig,
    *,
    prefix: str,
    suffix: str,
    context: str = "",
    path: str = "",
    language: str = "",
    middle: str | None = None,
) -> ModelRequest:
    """The request for the text between `prefix` and `suffix`, for the model `config` names.

    A `fim` provider gets a fill: other files' snippets (`context`, code comments) first in the prefix, FIM
    having no slot of their own. Every other provider gets the hole-filling conversation (`chat_messages`),
    one of a series (`FOLLOW_UP`). `middle` is set for a local model's anchored window
    (`inline.local_prompt`): the answer's beginning, already written, which with a FIM template is sent after
    the template's middle token for the model to continue; otherwise it ends the prefix."""
    begun = middle or ""
    if config.provider != "fim":
        messages = chat_messages(prefix + begun, suffix, path=path, language=language, context=context)
        return ModelRequest(
            messages=tuple((m["role"], m["content"]) for m in messages),
            follow_up=FOLLOW_UP,
            path=path,
            language=language,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
        )
    template = config.fim_template
    with_template = middle is not None and bool(template)
    return ModelRequest(
        prefix=context + prefix + begun,
        suffix=suffix,
        raw_prompt=fim_templates.render(template, context + prefix, suffix, begun) if with_template else "",
        stop=fim_templates.TEMPLATES[template].stop if with_template else (),
        path=path,
        language=language,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
    )


def warm_request() -> ModelRequest:
    """A request like the completions to come, before there is a document (`Tiers.warm`): what a backend
    that prepares a prompt ahead needs of it is its system text."""
    messages = chat_messages("", "")
    return ModelRequest(messages=tuple((m["role"], m["content"]) for m in messages), follow_up=FOLLOW_UP)


def chat_messages(
    prefix: str, suffix: str, *, path: str = "", language: str = "", context: str = ""
) -> list[dict[str, str]]:
    """The system and user messages that ask for the text between `prefix` and `suffix`.

    `context` (snippets from other files) comes first: it changes least from one keystroke to the next,
    so the provider's prompt cache keeps hitting on it; the cursor's neighbourhood comes last."""
    header = f"File: {path or 'untitled'}" + (f" ({language})" if language else "")
    related = f"Related code from other files:\n{context}\n" if context else ""
    user = f"{related}{header}\n{_OPEN}\n{prefix}{HOLE}{suffix}\n{_CLOSE}\nFill the hole."
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def split_chat_prompt(messages: list[dict[str, str]]) -> tuple[str, str] | None:
    """Recover (prefix, suffix) from messages built by `chat_messages`; None if they are not ours."""
    for message in reversed(messages):
        content = message.get("content", "")
        if not isinstance(content, str) or HOLE not in content:
            continue
        start = content.find(_OPEN)
        end = content.rfind(_CLOSE)
        if start < 0 or end < 0:
            return None
        body = content[start + len(_OPEN) + 1 : end - 1]
        prefix, _, suffix = body.partition(HOLE)
        return prefix, suffix
    return None
