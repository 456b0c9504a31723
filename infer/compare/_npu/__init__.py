"""Layer by layer against an NPU's dump (`compare --npu-dump`): the dump files of one execution, which TF tensor
each om op's output holds (the om's fusion map), and the comparison, which ends as the stand-in's does.

Nothing is imported here: each module is imported where it is used.
"""
