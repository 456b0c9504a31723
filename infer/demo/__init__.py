"""`infer demo`: a small ResNet-style checkpoint and a labelled image set, through every stage."""
