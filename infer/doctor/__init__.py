"""`infer doctor`: what is installed, whether it is the combination we test, and what will run for real."""

from infer.doctor._doctor import diagnose as diagnose
from infer.doctor.result import DoctorReport as DoctorReport
