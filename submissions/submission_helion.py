#!POPCORN leaderboard causal_conv1d
#!POPCORN gpu B200_Nebius
"""Causal depthwise conv1d in the Helion DSL, for the Helion Kernel Challenge rules.

Same algorithm as the Triton submission: x is viewed as [B*D rows, S/4 groups, 4], every
tile loads whole 16-byte groups, and the W - 1 left neighbours come from the groups
before, loaded the same aligned way and split apart in registers (hl.split / hl.join).
Rows whose length is not a multiple of 4 take a general kernel with one shifted load
per tap. Every config is hard-coded per shape (the runner sets
HELION_DISALLOW_AUTOTUNING=1); unseen shapes get a sound default.

Self-contained: the runner ships only this file, so the input checks are repeated here.
"""
import functools
import os

import helion
import helion.language as hl
import torch

from task import input_t, output_t

GROUP = 4  # fp32 elements in one 16-byte access

# Hard-coded per task shape, as the Helion rules require (the runner forbids autotuning): the picks
# of `python scripts/cli.py helion-tune` on an H200 with Helion 0.3.3, its search's pick timed beside
# one-row tiles (the three leaderboard shapes: run28, results/nvidia-h200/probe_run28.json).
# (B, D, S, W) -> config.
# <configs>
SHAPE_CONFIGS = {
    (1, 64, 64, 4): {
        'block_sizes': [8, 8],
        'loop_orders': [[0, 1]],
        'l2_groupings': [1],
        'range_unroll_factors': [0],
        'range_warp_specializes': [],
        'range_num_stages': [0],
        'range_multi_buffers': [None],
        'range_flattens': [None],
        'load_eviction_policies': [
            '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '',
        ],
        'num_warps': 2,
        'num_stages': 3,
        'indexing': [
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer',
        ],
        'pid_type': 'flat',
    },
    (1, 128, 64, 8): {
        'block_sizes': [1, 16],
        'loop_orders': [[0, 1]],
        'l2_groupings': [2],
        'range_unroll_factors': [0],
        'range_warp_specializes': [],
        'range_num_stages': [0],
        'range_multi_buffers': [None],
        'range_flattens': [None],
        'load_eviction_policies': [
            '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '',
            '', '', '', '', '', '', '', '', '', '', '', '',
        ],
        'num_warps': 1,
        'num_stages': 1,
        'indexing': [
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'tensor_descriptor', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
        ],
        'pid_type': 'flat',
    },
    (1, 256, 256, 3): {
        'block_sizes': [16, 4],
        'loop_orders': [[0, 1]],
        'l2_groupings': [1],
        'range_unroll_factors': [0],
        'range_warp_specializes': [],
        'range_num_stages': [0],
        'range_multi_buffers': [None],
        'range_flattens': [None],
        'load_eviction_policies': ['', '', '', '', '', '', '', '', '', '', '', '', '', '', ''],
        'num_warps': 1,
        'num_stages': 1,
        'indexing': [
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer', 'tensor_descriptor', 'pointer', 'pointer', 'pointer',
        ],
        'pid_type': 'flat',
    },
    (1, 1536, 2048, 4): {
        'block_sizes': [1, 512],
        'num_warps': 1,
    },
    (1, 2560, 2048, 4): {
        'block_sizes': [1, 512],
        'num_warps': 1,
    },
    (1, 2560, 4096, 4): {
        'block_sizes': [1, 1024],
        'num_warps': 2,
    },
    (2, 128, 128, 4): {
        'block_sizes': [32, 2],
        'loop_orders': [[0, 1]],
        'l2_groupings': [1],
        'range_unroll_factors': [0],
        'range_warp_specializes': [],
        'range_num_stages': [0],
        'range_multi_buffers': [None],
        'range_flattens': [None],
        'load_eviction_policies': [
            '', '', '', '', '', '', '', 'last', '', '', '', '', 'last', '', '', '', '', '', '',
        ],
        'num_warps': 1,
        'num_stages': 1,
        'indexing': [
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer',
        ],
        'pid_type': 'persistent_blocked',
        'num_sm_multiplier': 1,
        'maxnreg': 32,
    },
    (4, 64, 128, 4): {
        'block_sizes': [4, 16],
        'loop_orders': [[0, 1]],
        'l2_groupings': [1],
        'range_unroll_factors': [0],
        'range_warp_specializes': [],
        'range_num_stages': [1],
        'range_multi_buffers': [None],
        'range_flattens': [None],
        'load_eviction_policies': [
            '', '', '', '', '', '', '', '', 'last', '', '', '', '', '', '', '', '', '', '',
        ],
        'num_warps': 2,
        'num_stages': 3,
        'indexing': [
            'pointer', 'pointer', 'pointer', 'pointer', 'tensor_descriptor', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer', 'pointer',
            'pointer', 'pointer', 'pointer', 'pointer',
        ],
        'pid_type': 'persistent_interleaved',
        'num_sm_multiplier': 1,
    },
}
# </configs>


def conv1d_groups(x4: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """x4 [R, G, 4] (row r = b * D + d), w [D, W], b [D] -> out [R, G, 4]."""
    R, G, _ = x4.size()
    D = w.size(0)
    W = hl.specialize(w.size(1))
    out = torch.empty_like(x4)
    for tr, tg in hl.tile([R, G]):
        d = tr.index % D
        acc0 = hl.zeros([tr, tg], dtype=torch.float32) + b[d][:, None]
        acc1 = acc0
        acc2 = acc0
        acc3 = acc0
        # Group q back holds the lags 4q - 3 .. 4q + 3; lag W - 1 is the farthest needed.
        for q in hl.static_range((W + 6) // 4):
            if q == 0:
                group = x4[tr, tg, :]
            else:
                g = tg.index - q
                group = torch.where((g >= 0)[None, :, None], x4[tr, torch.clamp(g, min=0), :], 0.0)
            even, odd = hl.split(group.reshape([tr, tg, 2, 2]))
            c0, c2 = hl.split(even)
            c1, c3 = hl.split(odd)
            cols = (c0, c1, c2, c3)
            # Column r of the group q back serves output j at lag m = j + 4q - r.
            for r in hl.static_range(4):
                if 0 <= 4 * q - r < W:
                    acc0 = acc0 + w[d, W - 1 - (4 * q - r)][:, None] * cols[r]
                if 0 <= 1 + 4 * q - r < W:
                    acc1 = acc1 + w[d, W - 1 - (1 + 4 * q - r)][:, None] * cols[r]
                if 0 <= 2 + 4 * q - r < W:
                    acc2 = acc2 + w[d, W - 1 - (2 + 4 * q - r)][:, None] * cols[r]
                if 0 <= 3 + 4 * q - r < W:
                    acc3 = acc3 + w[d, W - 1 - (3 + 4 * q - r)][:, None] * cols[r]
        # join(join(o0, o2), join(o1, o3))[..., i, j] is o(2i + j): back to groups of 4 in order.
        out[tr, tg, :] = hl.join(hl.join(acc0, acc2), hl.join(acc1, acc3)).reshape([tr, tg, 4])
    return out


def conv1d_shifted(x2: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """x2 [R, S], any S: one shifted load per tap (the general path)."""
    R, S = x2.size()
    D = w.size(0)
    W = hl.specialize(w.size(1))
    out = torch.empty_like(x2)
    for tr, ts in hl.tile([R, S]):
        d = tr.index % D
        acc = hl.zeros([tr, ts], dtype=torch.float32) + b[d][:, None]
        for m in hl.static_range(W):
            src = ts.index - m
            tap = torch.where((src >= 0)[None, :], x2[tr, torch.clamp(src, min=0)], 0.0)
            acc = acc + w[d, W - 1 - m][:, None] * tap
        out[tr, ts] = acc
    return out


def default_config(B: int, D: int, S: int, W: int) -> dict:
    """One row per tile, up to 256 groups (1024 outputs) per program, one warp: the shape of the
    best Triton configs on the H200."""
    if S % GROUP:
        return dict(block_sizes=[1, min(1024, max(16, 1 << (S - 1).bit_length()))], num_warps=4)
    groups = S // GROUP
    return dict(block_sizes=[1, min(256, max(16, 1 << (groups - 1).bit_length()))], num_warps=1)


@functools.lru_cache(maxsize=None)
def _compiled(body_name: str, config_items: tuple) -> object:
    """One Helion kernel object per (body, config); it compiles once per shape and is reused."""
    body = {"groups": conv1d_groups, "shifted": conv1d_shifted}[body_name]
    config = helion.Config(**{k: (list(v) if isinstance(v, tuple) else v) for k, v in config_items})
    return helion.kernel(body, config=config, static_shapes=True)


def _freeze(config: dict) -> tuple:
    def freeze(v):
        return tuple(freeze(i) for i in v) if isinstance(v, list) else v
    return tuple(sorted((k, freeze(v)) for k, v in config.items()))


def validate(data) -> None:
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise ValueError("causal_conv1d expects data = (x, weight, bias)")
    x, weight, bias = data
    for name, tensor, rank in (("x", x, 3), ("weight", weight, 2), ("bias", bias, 1)):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
        if tensor.dtype != torch.float32:
            raise ValueError(f"{name} must be float32, got {tensor.dtype}")
        if tensor.dim() != rank:
            raise ValueError(f"{name} must have {rank} dimensions, got shape {tuple(tensor.shape)}")
    D = x.shape[1]
    if weight.shape[0] != D:
        raise ValueError(f"weight is [{weight.shape[0]}, W] but x has D = {D} channels")
    if weight.shape[1] < 1:
        raise ValueError(f"weight width W must be >= 1, got {weight.shape[1]}")
    if bias.shape[0] != D:
        raise ValueError(f"bias has {bias.shape[0]} entries but x has D = {D} channels")
    if not (x.device == weight.device == bias.device):
        raise ValueError(f"x, weight and bias must share one device, got {x.device}, {weight.device}, {bias.device}")
    if x.device.type != "cuda" and os.environ.get("HELION_INTERPRET") != "1":
        raise ValueError(f"tensors on {x.device} need a CUDA device (or HELION_INTERPRET=1 on the CPU)")


def custom_kernel(data: input_t) -> output_t:
    validate(data)
    x, weight, bias = (t.contiguous() for t in data)
    B, D, S = x.shape
    W = weight.shape[1]
    if x.numel() == 0:
        return torch.empty_like(x)
    config = SHAPE_CONFIGS.get((B, D, S, W)) or default_config(B, D, S, W)
    if S % GROUP == 0:
        kernel = _compiled("groups", _freeze(config))
        return kernel(x.view(B * D, S // GROUP, GROUP), weight, bias).view(B, D, S)
    kernel = _compiled("shifted", _freeze(default_config(B, D, S, W)))
    return kernel(x.view(B * D, S), weight, bias).view(B, D, S)
