"""Variant: submission.py with the output stored under an evict-first L2 hint (as a one-pass
copy would store), so the written lines leave L2 before the lines later programs read; search off, so
only the hint differs from variants/no_search.py."""
import math

import eval as harness
from scripts import SUBMISSION

_module = harness.load_submission(SUBMISSION, "submission_store_evict_first")
_module.TUNE_MIN_OUTPUTS = math.inf
_module.STORE_EVICTION = "evict_first"
custom_kernel = _module.custom_kernel
