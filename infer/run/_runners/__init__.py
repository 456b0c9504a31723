"""Runners: one small contract (activate / infer / deactivate) over ONNX Runtime, TensorFlow, msame and ais_bench.

Heavy frameworks are imported by the runner that needs them, when it is activated, never by this package.
"""

from infer.run._runners.base import BaseRunner as BaseRunner
from infer.run._runners.base import RunnerError as RunnerError
