"""Variant: each thread owns G consecutive 16-byte groups, so a group's left neighbours are in the
thread's own registers (the group before it), and only the first of the G needs a halo load.

submission.py loads every group twice (the group and the one before it, the second an L1 hit):
2 vector loads per 4 outputs, 16 per thread at the copy's best tile (4096 outputs, 4 warps). Here a
thread issues G + 1 loads for its G groups (9 at 4096/4 with G = 8), all before any store, and
keeps no second copy of the groups. The price: within one load instruction, neighbouring lanes are
16 * G bytes apart (each lane's groups are contiguous), so an instruction touches more cache lines;
the warp's G instructions together still read every byte of the lines they touch.

For W <= 5 (the halo is one group); wider filters fall back to submission.py's kernel.
TILES: (BLOCK, num_warps) -> G, with G = BLOCK / (4 * 32 * num_warps) so each thread holds one row
of groups per load. OWNED_TILE picks the tile; the environment variable OWNED_TILE=BLOCK,WARPS
overrides it for a sweep.
"""
import os

import triton
import triton.language as tl

from variants import _submission_base
from variants._submission_base import group_out

_base = _submission_base.load("submission_for_owned")
OWNED_TILE = tuple(int(v) for v in os.environ.get("OWNED_TILE", "4096,4").split(","))


@triton.jit
def _load(x_row, t, S):
    return tl.load(x_row + t, mask=(t >= 0) & (t < S), other=0.0)


@triton.jit
def owned_groups_kernel(x_ptr, w_ptr, b_ptr, out_ptr, D, S, chunks_per_row,
                        W: tl.constexpr, BLOCK: tl.constexpr, G: tl.constexpr):
    pid = tl.program_id(0)
    row = pid // chunks_per_row
    chunk = pid - row * chunks_per_row
    d = row % D
    row_start = row.to(tl.int64) * S
    x_row = x_ptr + row_start
    out_row = out_ptr + row_start
    w_row = w_ptr + d * W
    bias = tl.load(b_ptr + d)
    M: tl.constexpr = BLOCK // (4 * G)
    # Row m of the tile is groups m*G .. m*G + G - 1: t0 is the first of them, element by element.
    t0 = chunk * BLOCK + tl.arange(0, M)[:, None] * (4 * G) + tl.arange(0, 4)[None, :]
    halo = _load(x_row, t0 - 4, S)
    g0 = _load(x_row, t0, S)
    if G >= 2:
        g1 = _load(x_row, t0 + 4, S)
    if G >= 4:
        g2 = _load(x_row, t0 + 8, S)
        g3 = _load(x_row, t0 + 12, S)
    if G >= 8:
        g4 = _load(x_row, t0 + 16, S)
        g5 = _load(x_row, t0 + 20, S)
        g6 = _load(x_row, t0 + 24, S)
        g7 = _load(x_row, t0 + 28, S)
    tl.store(out_row + t0, group_out(halo, g0, w_row, bias, W, M), mask=t0 < S)
    if G >= 2:
        tl.store(out_row + t0 + 4, group_out(g0, g1, w_row, bias, W, M), mask=t0 + 4 < S)
    if G >= 4:
        tl.store(out_row + t0 + 8, group_out(g1, g2, w_row, bias, W, M), mask=t0 + 8 < S)
        tl.store(out_row + t0 + 12, group_out(g2, g3, w_row, bias, W, M), mask=t0 + 12 < S)
    if G >= 8:
        tl.store(out_row + t0 + 16, group_out(g3, g4, w_row, bias, W, M), mask=t0 + 16 < S)
        tl.store(out_row + t0 + 20, group_out(g4, g5, w_row, bias, W, M), mask=t0 + 20 < S)
        tl.store(out_row + t0 + 24, group_out(g5, g6, w_row, bias, W, M), mask=t0 + 24 < S)
        tl.store(out_row + t0 + 28, group_out(g6, g7, w_row, bias, W, M), mask=t0 + 28 < S)


def groups_per_thread(block: int, num_warps: int) -> int:
    """G for one row of groups per thread and load: BLOCK / (4 * 32 * num_warps), at least 1."""
    return max(1, block // (4 * 32 * num_warps))


# Every (BLOCK, num_warps, G) the kernel is built for: G in 2, 4, 8, one or two rows of groups a thread.
CONFIG_SPACE = [(block, warps, g) for block in (1024, 2048, 4096, 8192) for warps in (1, 2, 4, 8) for g in (2, 4, 8)
                if 1 <= block // (4 * g * 32 * warps) <= 2]


def launch(x, weight, bias, out, block: int, num_warps: int, G: int) -> None:
    B, D, S = x.shape
    chunks = triton.cdiv(S, block)
    owned_groups_kernel[(B * D * chunks,)](x, weight, bias, out, D, S, chunks, W=weight.shape[1], BLOCK=block, G=G,
                                           num_warps=num_warps)


def launch_serves(x, weight, out) -> bool:
    """Whether launch() can take this input: the left neighbours must lie in the one group before (W <= 5)."""
    return weight.shape[1] <= 5


def _config(x) -> tuple[int, int, int]:
    block, warps = OWNED_TILE
    block = min(block, max(64, triton.next_power_of_2(x.shape[-1])))
    return block, warps, groups_per_thread(block, warps)


custom_kernel, tile_for = _submission_base.custom_kernel_over(_base, launch, launch_serves, _config)
