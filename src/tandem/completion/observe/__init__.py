"""What tandem records about itself: one trace record per request (`trace`), its live OpenTelemetry export
(`otel`), and the last minutes' figures for the status display (`live_stats`).
"""
