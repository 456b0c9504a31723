"""The files Ascend's tools write, read without CANN: om files (header, partitions, the model's graph and GE
attributes, over a small protobuf wire reader), NPU dumps and their layouts. Imports nothing from the rest of
atc_wrap."""
