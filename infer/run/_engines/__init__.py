"""Where the shards of a sharded `infer run` execute: worker processes on this machine, or Ray tasks."""
