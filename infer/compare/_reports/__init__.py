"""The report folder of one comparison: checked and locked before it runs, then report.json, report.csv (with
report.provenance.json beside it) and report.html written into it.

Nothing is imported here: each module is imported where it is used.
"""
