"""Judging the outputs: msaccucmp's metrics over every batch (in workers or not), top-k against the labels, the
expected-error band from the stand-in's emulation, and the checks beside the verdict (AIPP against the declared
preprocessing, outputs the same for every sample, outputs on the fp16 grid).

Nothing is imported here: each module is imported where it is used, so reading a result's `Metrics` costs no run.
"""
