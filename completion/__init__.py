"""The model side of tandem: requests, backends, prompts, routing, post-processing, traces, simulator.

Knows nothing of LSP: it takes plain dataclasses (`completion.request`) so it can be tested and
benchmarked without a server.
"""
