"""What tandem records about itself: one trace record per request (`trace`), its live OpenTelemetry export
(`otel`), the last minutes' figures for the status display (`live_stats`), and the day's spend against
`[budget]` that every feature asks before it spends (`spend`, fed by the trace's records).
"""
