"""Variant: as helion_rowtile_a, in Helion's default grid order (rows fastest)."""
from variants._helion_tile import helion_with_configs

custom_kernel = helion_with_configs("helion_rowtile_b", dict(block_sizes=[1, 256], num_warps=1))
