"""A fake ais_bench package: ``python3 -m ais_bench`` with tests/fakes on PYTHONPATH."""
