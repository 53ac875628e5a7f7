"""Variant: as helion_evict_first, with the halo's group before loaded evict-first too."""
import helion  # noqa: F401  (eval.py picks Helion's interpreter on the CPU by this import)

from variants._helion_tile import X_GROUP, X_GROUP_BEFORE, helion_with_load_policies

custom_kernel = helion_with_load_policies("helion_evict_first_both", {X_GROUP: "first", X_GROUP_BEFORE: "first"})
