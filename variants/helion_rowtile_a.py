"""Variant: the Helion submission with the Triton winner's tile on the benchmark shapes: one row and
256 groups (1024 outputs) per program, one warp, groups fastest in the grid (loop_orders [[1, 0]])."""
import helion  # noqa: F401  (eval.py picks Helion's interpreter on the CPU by this import)

from variants._helion_tile import helion_with_configs

custom_kernel = helion_with_configs("helion_rowtile_a", dict(block_sizes=[1, 256], num_warps=1, loop_orders=[[1, 0]]))
