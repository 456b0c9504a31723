"""The top layer: model contract, runners, comparison, reports and the `infer` command line."""
