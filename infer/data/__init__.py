"""`infer dump-bin` and `infer bin-info`: datasets in (sources/), .bin files and dataset.json out."""
