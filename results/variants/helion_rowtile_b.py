"""Variant: as helion_rowtile_a, in Helion's default grid order (rows fastest)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _helion_tile import helion_with_configs  # noqa: E402

custom_kernel = helion_with_configs("helion_rowtile_b", dict(block_sizes=[1, 256], num_warps=1))
