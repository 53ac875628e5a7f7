"""Variant: as helion_rowtile_a, in Helion's default grid order (rows fastest)."""
import helion  # noqa: F401  (eval.py picks Helion's interpreter on the CPU by this import)

from variants._helion_tile import helion_with_configs

custom_kernel = helion_with_configs("helion_rowtile_b", dict(block_sizes=[1, 256], num_warps=1))
