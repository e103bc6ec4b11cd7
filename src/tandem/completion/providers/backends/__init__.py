"""Model backends behind one narrow interface (`base.Backend`): each speaks one provider API, sending the
`base.ModelRequest` its feature built (a conversation or a fill) and streaming back what the model wrote.

- `base`: the seam (`Backend`, `ModelRequest`, `StreamStats`, `Usage`);
- `factory`: the backend for a configured model (`make_backend`);
- `http_backend`: what every HTTP backend shares (endpoint, one call, warm-up, close);
- `streaming`: one streamed POST, its failures mapped to errors, OpenAI-shaped chunks parsed;
- `openai_chat`: `openai-chat`, Chat Completions;
- `fim`: `fim`, fill-in-the-middle over `/completions` (conversations over the same server's chat endpoint);
- `fim_templates`: each model family's raw fill-in-the-middle tokens;
- `sse_stream`: what `anthropic` and `openai-responses` share: named events, stop strings cut by the client;
- `anthropic`: `anthropic`, the Messages API;
- `openai_responses`: `openai-responses`, the Responses API over HTTP;
- `responses_ws`: the Responses API over kept WebSocket connections;
- `ws_pool`: those connections;
- `continuation`: a prompt sent as an edit of the previous one on a WebSocket.
"""
