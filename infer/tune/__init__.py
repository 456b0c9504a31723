"""`infer tune-precision`: the ops to keep in fp32 so that compare passes under an fp16 precision mode."""
