"""Defaults more than one stage takes, each written once: standard library only, so the options that use them import
nothing heavy (the subprocess machinery of binio.process among them)."""

# How long atc, msame or ais_bench may take before they are stopped: a large model takes ATC tens of minutes, a
# large dataset msame as long; a hang should still end.
DEFAULT_TOOL_TIMEOUT_S = 3600.0
