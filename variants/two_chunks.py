"""Variant: submission.py with each program taking two 1024-output blocks of its row in turn (search
off): half the programs, the same registers, so the 1x2560x2048 case fits one wave (NOTES v6)."""
import math

import eval as harness
from scripts import SUBMISSION

_module = harness.load_submission(SUBMISSION, "submission_two_chunks")
_module.TUNE_MIN_OUTPUTS = math.inf
_module.CHUNKS = 2
custom_kernel = _module.custom_kernel
