"""Traces as data: normalisation (ids, times, ports and secrets scrubbed) and golden files."""
