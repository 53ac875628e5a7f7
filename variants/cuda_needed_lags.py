"""Variant: submission.py's CUDA kernel, shuffling only the lags the window reaches.

submission.py's kernel shuffles the whole group of 4 before each group of 4 outputs (4 SHFL and 4
selects per group at W = 4), though outputs 4g .. 4g + 3 reach back only to x[4g - (W - 1)]: at W = 4
the first value of the previous group is never read. A shuffle is not dead code to the compiler (it
synchronizes the warp), so the unused one is issued. Here each group back shuffles only the values at
lags the window reaches: W - 1 values in all (3 at W = 4). The tile space is the submission's CUDA
configs (results/NOTES.md v30)."""
from pathlib import Path

import eval as harness

_module = harness.load_submission(Path(__file__).resolve().parent.parent / "submission.py", "submission_needed_lags")

_EVERY_VALUE = """\
#pragma unroll
    for (int q = 1; q <= Q; ++q) {
      float4 p = shuffle_group(v > 0 && lane >= 32 - q ? cur[v > 0 ? v - 1 : 0] : cur[v], (lane - q) & 31);
      if (v == 0 && lane < q) p = edge[q - 1];
      e[4 * (Q - q) + 0] = p.x;
      e[4 * (Q - q) + 1] = p.y;
      e[4 * (Q - q) + 2] = p.z;
      e[4 * (Q - q) + 3] = p.w;
    }
"""
# Value c of group q back is x[4g - 4q + c]: the window reads it where 4q - c <= W - 1.
_NEEDED_VALUES = """\
#pragma unroll
    for (int q = 1; q <= Q; ++q) {
      const float4 s = v > 0 && lane >= 32 - q ? cur[v > 0 ? v - 1 : 0] : cur[v];
      const float from[4] = {s.x, s.y, s.z, s.w};
      const float held[4] = {edge[q - 1].x, edge[q - 1].y, edge[q - 1].z, edge[q - 1].w};
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        if (4 * q - c > W - 1) continue;
        const float p = __shfl_sync(0xffffffffu, from[c], (lane - q) & 31);
        e[4 * (Q - q) + c] = v == 0 && lane < q ? held[c] : p;
      }
    }
"""
if _EVERY_VALUE not in _module.CUDA_SOURCE:
    raise ImportError("submission.py's CUDA kernel changed: cuda_needed_lags.py no longer applies to it")
_module.CUDA_SOURCE = _module.CUDA_SOURCE.replace(_EVERY_VALUE, _NEEDED_VALUES)

CONFIG_SPACE = [config for config in _module.CONFIG_SPACE if config[2:] and config[2] in _module.CUDA_BUILDS]
launch, custom_kernel, tile_for = _module.launch, _module.custom_kernel, _module.tile_for
