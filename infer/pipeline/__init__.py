"""`infer pipeline`: every stage from one TOML file, re-runs skipping what has not changed."""
