"""Model backends behind one narrow interface (`base.Backend`: stream text for a request, and close), one
per API: a backend speaks its API.

- `base`              the seam: `Backend`, `ModelRequest`, usage and a stream's figures
- `factory`           the backend a `ModelConfig` names (a tagged union keyed by `provider`)
- `http_backend`      what every HTTP backend shares: endpoint, one `StreamCall`, warming, closing
- `streaming`         one streamed request to an OpenAI-compatible API, its SSE body parsed into chunks
- `openai_chat`       `openai-chat`: Chat Completions
- `fim`               `fim`: fill-in-the-middle over Completions
- `fim_templates`     raw fill-in-the-middle prompts with each model family's special tokens
- `sse_stream`        what the accurate tier's backends share: typed SSE events and the text pipeline
- `anthropic`         `anthropic`: Anthropic's Messages API
- `openai_responses`  `openai-responses`: OpenAI's Responses API over HTTP
- `responses_ws`      `openai-responses` over one persistent WebSocket
- `ws_pool`           a model's WebSocket connections, opened ahead, kept alive, reopened with back-off
- `continuation`      continuing from the previous response on a Responses WebSocket
"""
