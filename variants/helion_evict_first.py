"""Variant: the Helion submission at its own tiles with x's own group loaded evict-first (the halo's group
before as it is): on the H200 a Triton copy so hinted read 1.4-2.1% faster on the S = 2048 cases (NOTES v18),
where the Triton kernel with both of x's loads hinted lost 7-11%."""
import helion  # noqa: F401  (eval.py picks Helion's interpreter on the CPU by this import)

from variants._helion_tile import X_GROUP, helion_with_load_policies

custom_kernel = helion_with_load_policies("helion_evict_first", {X_GROUP: "first"})
