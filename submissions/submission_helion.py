#!POPCORN leaderboard causal_conv1d
#!POPCORN gpu B200_Nebius
"""Causal depthwise conv1d in the Helion DSL, for the Helion Kernel Challenge rules.

Three kernels, each with a config hard-coded per shape (the runner sets HELION_DISALLOW_AUTOTUNING=1):
- conv1d_lanes, on the benchmark shapes (LANES_CONFIGS): lane l of a warp holds groups 32 v + l of its span
  (16-byte groups of 4 outputs, v < V slots, all loaded at once) and takes the W - 1 = 3 left neighbours from
  lane l - 1 with a warp shuffle; lane 0 takes them from lane 31 of the slot before, moved up a slot in
  registers, and slot 0's from one masked load. The shuffle and one barrier are `hl.inline_asm_elementwise`,
  the rules' escape hatch; the loads, arithmetic and stores are Helion. Its layout was read under Triton 3.6
  (the runner's release) from Helion 0.3's code, so under any other release these shapes take conv1d_groups.
- conv1d_groups, everywhere else: x viewed as [B*D rows, S/4 groups, 4], every tile loads whole 16-byte
  groups, and the left neighbours come from the groups before, loaded the same aligned way and split apart in
  registers (hl.split / hl.join). Rows whose length is not a multiple of 4 take conv1d_shifted, one shifted
  load per tap. Unseen shapes get a sound default.

Self-contained: the runner ships only this file, so the input checks are repeated here.
"""
import functools
import importlib.metadata
import os

import helion
import helion.language as hl
import torch
import triton

from task import input_t, output_t

GROUP = 4  # fp32 elements in one 16-byte access

# conv1d_groups' configs, hard-coded per task shape, as the Helion rules require (the runner forbids
# autotuning): the picks of `python scripts/cli.py helion-tune` on an H200 with Helion 0.3.3, its search's
# pick timed beside one-row tiles (the three leaderboard shapes: run28, results/nvidia-h200/probe_run28.json).
# The benchmark shapes take conv1d_lanes instead where LANES_CONFIGS serves them (Triton 3.6, Helion 0.3).
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


# The lane-shuffle kernel on the benchmark shapes: (B, D, S, W) -> (V slots a lane, NW warps a program, x's
# eviction policy, HALO). HALO is where lane 0 gets the group before each slot: "shift" (one masked load for
# slot 0, lane 31's shuffled values moved up a slot for the others), "each" (one masked load a slot, before
# the barrier) or "each-after" (the same, after it). The picks of one call on an H100 (run115,
# results/nvidia-h100/helion_lanes_run115.json: six configurations, three rounds); `python scripts/cli.py
# helion-tune-lanes` times the candidates on the GPU at hand and rewrites this table.
# <lanes-configs>
LANES_CONFIGS = {
    (1, 1536, 2048, 4): (4, 8, 'first', 'shift'),
    (1, 2560, 2048, 4): (16, 2, 'first', 'shift'),
    (1, 2560, 4096, 4): (16, 2, 'first', 'shift'),
}
# </lanes-configs>
HALOS = ("shift", "each", "each-after")
# The Triton releases whose layout of the [T, V] operands was read (TTGIR, sm_90 and sm_100) to put T on
# the lanes: 3.6 (the runner's). 3.7.1 puts the lanes on V, where a shuffle would read the wrong group. The
# Helion releases whose generated code that was: the [T, V] indexing and the load numbering are Helion's.
LANE_MAJOR_TRITONS = ("3.6.",)
LANE_MAJOR_HELIONS = ("0.3.",)
LANES_LOADS = 7  # the slots, the halo, four taps, the bias: how Helion numbers the loads for load_eviction_policies
SHFL = "shfl.sync.idx.b32 $0, $1, $2, 0x1f, 0xffffffff;"
BAR = "bar.sync 0;\n\tmov.b32 $0, $1;"


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


def split_columns(group, tile, n: int):
    """[T, n, 4] -> its four columns, each [T, n]."""
    even, odd = hl.split(group.reshape([tile, n, 2, 2]))
    c0, c2 = hl.split(even)
    c1, c3 = hl.split(odd)
    return c0, c1, c2, c3


def from_lane(col, src, INTERPRET: bool):
    """[T, V] -> each lane gets lane src's value in the same slot: a warp shuffle; on the CPU, a gather within
    each 32 lanes."""
    if INTERPRET:
        by_warp = [-1, 32, col.size(1)]
        return torch.gather(col.reshape(by_warp), 1, src.reshape(by_warp).long()).reshape(col.size())
    return hl.inline_asm_elementwise(SHFL, "=f,f,r", [col, src], dtype=torch.float32, is_pure=True, pack=1)


def shift_slots(t, fill, tile, n: int):
    """[T, n] -> [T, n]: slot v gets slot v - 1's value and slot 0 gets fill [T]; in registers (split and join)."""
    if n == 1:
        return fill.unsqueeze(1)
    even, odd = hl.split(t.reshape([tile, n // 2, 2]))
    return hl.join(shift_slots(odd, fill, tile, n // 2), even).reshape([tile, n])


def barrier(INTERPRET: bool):
    """31, from an inline bar.sync on the GPU: the shuffles' source lane reads it, so they stay after it and it
    after every load before it (ptxas then issues all the loads before the first shuffle)."""
    step = hl.full([], 31, dtype=torch.int32)
    if INTERPRET:
        return step
    return hl.inline_asm_elementwise(BAR, "=r,r", [step], dtype=torch.int32, is_pure=False, pack=1)


def load_groups(x4, at, wanted, INTERPRET: bool):
    """x4's groups at `at` ([T] or [T, V]) -> [..., 4], zero where `wanted` is false (a masked load on the GPU;
    `at` is clamped so that even a masked-off address is in bounds). Helion's interpreter takes index tensors as
    an outer product and its code generator broadcasts them, hence two spellings; `unsqueeze`, since in a
    helper Helion traces, `[:, None]` does not lower."""
    if INTERPRET:
        return torch.where(wanted.unsqueeze(-1), x4[torch.clamp(at, min=0), :], 0.0)
    column = hl.arange(4)
    if at.dim() == 1:
        return hl.load(x4, [torch.clamp(at, min=0).unsqueeze(1), column.unsqueeze(0)], extra_mask=wanted.unsqueeze(1))
    return hl.load(x4, [torch.clamp(at, min=0).unsqueeze(2), column.unsqueeze(0).unsqueeze(0)],
                   extra_mask=wanted.unsqueeze(2))


def load_slots(x4, at, INTERPRET: bool):
    """x4's groups at `at` [T, V] -> [T, V, 4], every one in bounds."""
    if INTERPRET:
        return x4[at, :]
    return hl.load(x4, [at.unsqueeze(2), hl.arange(4).unsqueeze(0).unsqueeze(0)])


def conv1d_lanes(x4: torch.Tensor, w: torch.Tensor, b: torch.Tensor, groups_per_row: int, V: hl.constexpr,
                 HALO: hl.constexpr, INTERPRET: hl.constexpr) -> torch.Tensor:
    """x4 [B * D * G, 4] (G = S / 4 groups a row, a multiple of 32 V), w [D, 4], b [D] -> out like x4.

    All V slots of a lane come from one load indexed by a [T, V] tensor of groups, T = NW * 32 lanes first:
    every pointer dimension but the last then has contiguity 1, and Triton 3.6 puts the lanes and warps on T
    and the slots in registers, which is what the shuffle needs."""
    D = w.size(0)
    G = hl.specialize(groups_per_row)
    spans_per_row = G // (32 * V)
    out = torch.empty_like(x4)
    for tile in hl.tile(x4.size(0) // V):  # one lane of one span each: B * D * spans_per_row * 32 of them
        lane = tile.index % 32
        span = tile.index // 32
        row = span // spans_per_row
        d = row % D
        slot = hl.arange(V)
        g0 = (span % spans_per_row) * (32 * V) + lane  # slot 0's group within the row
        g = g0[:, None] + 32 * slot[None, :]
        at = row[:, None] * G + g  # [T, V] groups of x4
        first_lane = lane == 0
        slots = load_slots(x4, at, INTERPRET)
        if HALO == "each":
            halo = load_groups(x4, at - 1, first_lane[:, None] & (g >= 1), INTERPRET)
            step = barrier(INTERPRET)
        elif HALO == "each-after":
            step = barrier(INTERPRET)
            halo = load_groups(x4, at - 1, first_lane[:, None] & (g >= 1), INTERPRET)
        else:  # "shift"
            halo = load_groups(x4, row * G + g0 - 1, first_lane & (g0 >= 1), INTERPRET)
            step = barrier(INTERPRET)
        src = ((lane + step) % 32).to(torch.int32)[:, None] + 0 * slot[None, :].to(torch.int32)  # lane l - 1
        c0, c1, c2, c3 = split_columns(slots, tile, V)
        s1 = from_lane(c1, src, INTERPRET)
        s2 = from_lane(c2, src, INTERPRET)
        s3 = from_lane(c3, src, INTERPRET)
        if HALO == "shift":  # lane 0 of slot v wants lane 31 of slot v - 1; of slot 0, the halo
            halo_even, halo_odd = hl.split(halo.reshape([tile, 2, 2]))
            _, h2 = hl.split(halo_even)
            h1, h3 = hl.split(halo_odd)
            p1 = torch.where(first_lane[:, None], shift_slots(s1, h1, tile, V), s1)
            p2 = torch.where(first_lane[:, None], shift_slots(s2, h2, tile, V), s2)
            p3 = torch.where(first_lane[:, None], shift_slots(s3, h3, tile, V), s3)
        else:
            _, h1, h2, h3 = split_columns(halo, tile, V)
            p1 = torch.where(first_lane[:, None], h1, s1)
            p2 = torch.where(first_lane[:, None], h2, s2)
            p3 = torch.where(first_lane[:, None], h3, s3)
        # w[d, 3 - m] weighs lag m; the group before's columns 3, 2, 1 are lags 1, 2, 3 of column 0.
        t0 = w[d, 3][:, None]
        t1 = w[d, 2][:, None]
        t2 = w[d, 1][:, None]
        t3 = w[d, 0][:, None]
        bias = b[d][:, None]
        o0 = bias + t0 * c0 + t1 * p3 + t2 * p2 + t3 * p1
        o1 = bias + t0 * c1 + t1 * c0 + t2 * p3 + t3 * p2
        o2 = bias + t0 * c2 + t1 * c1 + t2 * c0 + t3 * p3
        o3 = bias + t0 * c3 + t1 * c2 + t2 * c1 + t3 * c0
        result = hl.join(hl.join(o0, o2), hl.join(o1, o3)).reshape([tile, V, 4])  # back to groups of 4 in order
        if INTERPRET:
            out[at, :] = result
        else:
            hl.store(out, [at[:, :, None], hl.arange(4)[None, None, :]], result)
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
    body = {"groups": conv1d_groups, "shifted": conv1d_shifted, "lanes": conv1d_lanes}[body_name]
    config = helion.Config(**{k: (list(v) if isinstance(v, tuple) else v) for k, v in config_items})
    return helion.kernel(body, config=config, static_shapes=True)


def lanes_config(x, weight) -> tuple | None:
    """LANES_CONFIGS' entry where conv1d_lanes serves the input, else None: a shape the table holds, W = 4, S a
    multiple of the span (32 V groups), x 16-byte aligned, and the Triton and Helion releases whose layout the
    shuffles rely on (or Helion's interpreter)."""
    config = LANES_CONFIGS.get((*x.shape, weight.shape[1]))
    if (config is None or weight.shape[1] != 4 or x.shape[2] % (32 * config[0] * GROUP) or x.data_ptr() % 16
            or not (helion_interpreter() or (triton.__version__.startswith(LANE_MAJOR_TRITONS)
                                              and helion_release().startswith(LANE_MAJOR_HELIONS)))):
        return None
    return config


def lanes_kernel_config(num_warps: int, evict: str) -> dict:
    """conv1d_lanes' Helion config: one lane a T element, NW warps; `evict` on x's slot load."""
    config = dict(block_sizes=[num_warps * 32], num_warps=num_warps)
    if evict:
        config["load_eviction_policies"] = [evict] + [""] * (LANES_LOADS - 1)
    return config


def helion_interpreter() -> bool:
    return os.environ.get("HELION_INTERPRET") == "1"


def helion_release() -> str:
    try:
        return importlib.metadata.version("helion")
    except importlib.metadata.PackageNotFoundError:  # a source checkout without metadata: not a release we read
        return ""


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
    lanes = lanes_config(x, weight)
    if lanes is not None:
        V, num_warps, evict, halo = lanes
        kernel = _compiled("lanes", _freeze(lanes_kernel_config(num_warps, evict)))
        out = kernel(x.view(B * D * S // GROUP, GROUP), weight, bias, S // GROUP, V, halo, helion_interpreter())
        return out.view(B, D, S)
    config = SHAPE_CONFIGS.get((B, D, S, W)) or default_config(B, D, S, W)
    if S % GROUP == 0:
        kernel = _compiled("groups", _freeze(config))
        return kernel(x.view(B * D, S // GROUP, GROUP), weight, bias).view(B, D, S)
    kernel = _compiled("shifted", _freeze(default_config(B, D, S, W)))
    return kernel(x.view(B * D, S), weight, bias).view(B, D, S)
