"""ATC's precision model: its modes and syntaxes, the chips' operator tables (committed data, `op_tables_data/`), the
per-op controls, and the precision plan (each op's dtype on a chip) with the pre-check read from it."""
