"""`infer run`: one batch loop over a runner (plain.py), or shards over devices or Ray (sharded.py)."""
