"""Variant: submissions/submission_helion.py with the Triton winner's tile on the benchmark shapes.

One row and 256 groups (1024 outputs) per program, one warp, groups fastest in the grid (loop_orders [[1, 0]]). Loads the
submission under its own module name and overrides only SHAPE_CONFIGS.
"""
import importlib.util
import sys
from pathlib import Path

_path = Path(__file__).resolve().parent.parent.parent / "submissions" / "submission_helion.py"
_spec = importlib.util.spec_from_file_location("helion_rowtile_a", _path)
_module = importlib.util.module_from_spec(_spec)
sys.modules["helion_rowtile_a"] = _module
_spec.loader.exec_module(_module)
for _shape in [(1, 1536, 2048, 4), (1, 2560, 2048, 4), (1, 2560, 4096, 4)]:
    _module.SHAPE_CONFIGS[_shape] = dict(block_sizes=[1, 256], num_warps=1, loop_orders=[[1, 0]])
custom_kernel = _module.custom_kernel
