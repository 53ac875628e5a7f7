"""Variant: persistent programs that keep the next block's loads in flight while they compute and
store the current one (issue 17, direction "keep a program's next loads in flight"; NOTES v8).

A grid of PER_SM programs per SM (at most one per block) walks the blocks of BLOCK outputs with a
stride of the grid. Each step issues the next block's loads (its groups and the groups before
them, as submission.py loads them) before the current block's arithmetic and stores, so a program
never waits for its own stores to start loading; and with a fixed grid there is no last partial
wave. The price is two blocks' groups in registers at once. num_stages=1: the loads stay where
they are written (no software pipelining into shared memory by the compiler).

For W <= 5 (the left neighbours lie in the one group before); wider filters use submission.py's kernel.
CONFIG_SPACE: (BLOCK, num_warps, PER_SM); PERSISTENT_TILE=BLOCK,WARPS,PER_SM overrides the default.
"""
import os

import triton
import triton.language as tl

from variants import _submission_base
from variants._submission_base import group_out

_base = _submission_base.load("submission_for_persistent")
PERSISTENT_TILE = tuple(int(v) for v in os.environ.get("PERSISTENT_TILE", "512,1,24").split(","))


@triton.jit
def _block_loads(x_ptr, block, chunks_per_row, S, total_blocks, lanes, BLOCK: tl.constexpr):
    """The groups of one block and the groups before them (zeros past the row or past the last block)."""
    row = block // chunks_per_row
    t = (block - row * chunks_per_row) * BLOCK + lanes
    x_row = x_ptr + row.to(tl.int64) * S
    live = block < total_blocks
    cur = tl.load(x_row + t, mask=live & (t < S), other=0.0)
    prev = tl.load(x_row + t - 4, mask=live & (t >= 4) & (t - 4 < S), other=0.0)
    return cur, prev


@triton.jit
def persistent_kernel(x_ptr, w_ptr, b_ptr, out_ptr, D, S, chunks_per_row, total_blocks,
                      W: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0)
    N: tl.constexpr = BLOCK // 4
    lanes = tl.arange(0, N)[:, None] * 4 + tl.arange(0, 4)[None, :]
    cur, prev = _block_loads(x_ptr, pid, chunks_per_row, S, total_blocks, lanes, BLOCK)
    for block in range(pid, total_blocks, step):
        nxt, nxt_prev = _block_loads(x_ptr, block + step, chunks_per_row, S, total_blocks, lanes, BLOCK)
        row = block // chunks_per_row
        t = (block - row * chunks_per_row) * BLOCK + lanes
        d = row % D
        w_row = w_ptr + d * W
        out = group_out(prev, cur, w_row, tl.load(b_ptr + d), W, N)
        tl.store(out_ptr + row.to(tl.int64) * S + t, out, mask=t < S)
        cur = nxt
        prev = nxt_prev


CONFIG_SPACE = [(block, 1, per_sm) for block in (512, 1024) for per_sm in (8, 16, 24, 32)]


def launch(x, weight, bias, out, block: int, num_warps: int, per_sm: int) -> None:
    B, D, S = x.shape
    chunks = triton.cdiv(S, block)
    total = B * D * chunks
    grid = min(total, per_sm * _submission_base.sm_count(x.device))
    persistent_kernel[(grid,)](x, weight, bias, out, D, S, chunks, total, W=weight.shape[1], BLOCK=block,
                               num_warps=num_warps, num_stages=1)


def launch_serves(x, weight, out) -> bool:
    """Whether launch() can take this input: the left neighbours must lie in the one group before (W <= 5)."""
    return weight.shape[1] <= 5


def _config(x) -> tuple[int, int, int]:
    block, warps, per_sm = PERSISTENT_TILE
    return min(block, max(64, triton.next_power_of_2(x.shape[-1]))), warps, per_sm


custom_kernel, tile_for = _submission_base.custom_kernel_over(_base, launch, launch_serves, _config)
