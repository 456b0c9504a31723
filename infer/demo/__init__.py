"""`infer demo`: a small ResNet-style checkpoint and a labelled image set, through every stage."""

from infer.demo._run import DemoResult as DemoResult
from infer.demo._run import run_demo as run_demo
