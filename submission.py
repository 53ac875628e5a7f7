#!POPCORN leaderboard causal_conv1d
#!POPCORN gpu B200_Nebius
"""Causal depthwise conv1d in one Triton kernel, at the cost of a copy of x.

out[b, d, t] = bias[d] + sum_k weight[d, k] * x[b, d, t - W + 1 + k], x = 0 at negative t.

Each program owns BLOCK consecutive outputs of one (b, d) row. It views them as
[BLOCK / 4, 4]: every thread holds whole 4-element groups, so each load and store is
one aligned 16-byte access. The W - 1 left neighbours a group needs come from the
groups before it, loaded the same aligned way (they hit L1: the neighbouring thread
just loaded them) and picked apart in registers. So the kernel issues
1 + ceil((W - 1) / 4) vector loads and one vector store per 4 outputs, with no shifted
or scalar loads and no division per element.

The same arithmetic is also written in CUDA C++ (built at run time by NVRTC through torch, no
compiler on PATH needed): each thread loads its groups once and takes the W - 1 left neighbours
from the lanes to its left by warp shuffle, so it holds fewer registers at wide tiles. Its unit is
the warp, not the block: where a row is shorter than a block, one block covers several rows, so the
copy's fastest tiles leave no lane idle on short rows. A second build of it loads x evict-first
(PTX .cs, in L1 and L2): x is read once, so the lines it brings in are the first to go, and lines
that others left dirty in the L2 stay unwritten for longer. It is a candidate, never the default: it runs
only where the first-call search timed it faster.

The tile (BLOCK outputs, num_warps, and how it is built) comes from a measured table where one
exists; elsewhere, as on a B200 nobody here has measured, the first call for a large shape times a
short list of tiles (Triton and CUDA, and the runner's PTXAS control files, where present) the way
the leaderboard times, and keeps the fastest for the process. Small shapes, and calls inside a
CUDA-graph capture, take the heuristic, a Triton tile.

Self-contained: the runner ships only this file beside its own task.py.
"""
import contextlib
import functools
import glob
import io
import math
import os
import sys
import time

import torch
import triton
import triton.language as tl

from task import input_t, output_t

# A config is (BLOCK, num_warps, build): build None is the Triton kernel as it is, CUDA the CUDA kernel,
# CUDA_EF the CUDA kernel with evict-first loads of x, any other string ptxas options for the Triton
# kernel (a PTXAS control file).
CUDA = "cuda"
CUDA_EF = "cuda-ef"
CUDA_BUILDS = (CUDA, CUDA_EF)
# Measured exceptions to the heuristic: (gpu, B, D, S, W) -> (BLOCK, num_warps[, build]), written by
# `python scripts/cli.py tune`, which keeps only the shapes where the heuristic lost. BLOCK: outputs
# per program along S. On the H200 the heuristic won every leaderboard case (results/NOTES.md, v2).
# <configs>
CONFIGS = {}
# </configs>

# Where no entry exists, the first call for a (GPU, shape) of at least a million outputs times these
# with the leaderboard's timing and keeps the fastest for the process (configs only, never outputs).
TUNE_ENV = "CAUSAL_CONV1D_TUNE"  # 0, off, false or no switch the first-call search off
TUNE_WORDS = {"0": False, "off": False, "false": False, "no": False, "1": True, "on": True, "true": True, "yes": True}
TUNE_MIN_OUTPUTS = 1 << 20
TUNE_BUDGET_S = 8.0  # no new candidate is built after half of this; the lot stays near 15 s at the largest shape, re-timing included
TUNE_MARGIN = 0.01  # a candidate must beat all before it in the list by this much: the H200 search's own spread
# The candidates within FINAL_BAND of the fastest are timed again together with RETIME_SAMPLES samples, and
# the margin is applied to those times: on the H100 a gap of 1.2-1.5% straddled the margin under six
# samples and three processes took three configs on 1x2560x2048 (results/NOTES.md v28).
# At most MAX_FINALISTS, the fastest, so the re-timing takes no more samples than the first timing (12 x 6).
FINAL_BAND = 2 * TUNE_MARGIN
MAX_FINALISTS = 4
RETIME_SAMPLES = 18
# The re-timing's margin: three processes read the same pair's gap within 0.1-0.3% of each other at 18 samples
# (H100 run51), so a 1% margin left a 1-1.5% gap (cuda-ef over cuda at 4096/2, 1x2560x2048) on its edge.
RETIME_MARGIN = TUNE_MARGIN / 2
MAX_CANDIDATES = 12
# Control files tried on the heuristic tile. With three, the cut at MAX_CANDIDATES takes the Triton runners-up
# and the last CUDA tile, 2048/16: the large shapes' pick, never a leaderboard case's (run77, run78, run86, run87).
MAX_ACF = 3
# Every tile the kernel is built for (BLOCK, num_warps): each thread owns 2 to 16 groups of 4 (8 to 64
# outputs); fewer starves the loads in flight, more leaves too few programs for the small cases.
TILES = [(block, warps) for block in (256, 512, 1024, 2048, 4096) for warps in (1, 2, 4, 8)
         if 8 <= block // (32 * warps) <= 64]
# Tiles only the CUDA kernel is a candidate at: one group of 4 a thread in blocks of 512 threads. On the
# large shapes the conv gets faster as a thread's share shrinks and its block grows, as the copies do (H100
# run45: 2048/16 the fastest config on 4x2560x4096 and 8x4096x8192, 0.9-1.4% under 1024/1).
CUDA_TILES = TILES + [(2048, 16)]
CONFIG_SPACE = TILES + [(block, warps, build) for build in CUDA_BUILDS for block, warps in CUDA_TILES]
# The H200 sweeps' runners-up, best first (Triton: run20; CUDA: run23, results/nvidia-h200/tiles_run23.json, each the
# best or within 1% of it on some case; CUDA_EF: run32, where evict-first loads won on the S = 2048 cases;
# 2048/16: H100 run45, the large shapes; 4096/4 and 4096/8 evict-first: the H100 sweep's two fastest on the
# one-wave case (run78), and 4096/8 1.5% faster still once the flat walk shifts (run85)); the heuristic goes
# first. 1024/4 and 512/1 CUDA made way for those two: 1.9% or more behind the fastest candidate on every
# leaderboard case in the H100 and H200 searches (run78; results/nvidia-h200/search_check.json, 7c8dbb5).
# They had been near the fastest on the large shapes only (1024/4 the H100's pick on 8x4096x8192 in run77,
# 2048/16 0.28% faster inside the margin).
CANDIDATES = [(4096, 8), (2048, 4), (1024, 2), (512, 1)]
CUDA_CANDIDATES = [(4096, 2, CUDA), (2048, 1, CUDA), (4096, 2, CUDA_EF), (2048, 1, CUDA_EF),
                   (1024, 2, CUDA), (4096, 8, CUDA_EF), (4096, 4, CUDA_EF), (2048, 2, CUDA), (2048, 16, CUDA)]
# PTXAS Advanced Controls Files that only the B200 runner has; each joins the list on the heuristic tile.
ACF_GLOB = "/opt/booster_pack/*.acf"
# reference.py's tolerance, by its names there (this file travels alone, so it cannot import them)
RTOL = 1e-3
ATOL = 1e-3
MAX_GRID_YZ = 65535  # CUDA's limit on a grid's y and z
FLUSH_INT64S = 32 * 1024 * 1024  # 256 MB zeroed before each timed call, as the leaderboard does
WARM_UP_S = 0.25  # the GPU kept busy before the search's first sample, so its clocks are up

@triton.jit
def columns(group):
    """[N, 4] -> its four columns, each [N], without leaving the thread's registers."""
    n: tl.constexpr = group.shape[0]
    even, odd = tl.split(group.reshape(n, 2, 2))
    c0, c2 = tl.split(even)
    c1, c3 = tl.split(odd)
    return c0, c1, c2, c3


@triton.jit
def add_taps(acc, cols, w_row, W: tl.constexpr, q: tl.constexpr, j: tl.constexpr):
    """Add to output column j the taps that fall in the group q groups back.

    cols[r] holds x[4n - 4q + r]; output 4n + j needs x[4n + j - m] for lag m in [0, W),
    so column r serves lag m = j + 4q - r, weighted by weight[d, W - 1 - m].
    """
    for r in tl.static_range(4):
        m = j + 4 * q - r
        if m >= 0:
            if m < W:
                acc += tl.load(w_row + (W - 1 - m)) * cols[r]
    return acc


@triton.jit
def causal_conv1d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, D, S, chunks_per_row,
                         W: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = pid // chunks_per_row  # b * D + d
    chunk = pid - row * chunks_per_row
    d = row % D
    row_start = row.to(tl.int64) * S
    x_row = x_ptr + row_start
    w_row = w_ptr + d * W

    N: tl.constexpr = BLOCK // 4
    t = chunk * BLOCK + tl.arange(0, N)[:, None] * 4 + tl.arange(0, 4)[None, :]
    bias = tl.load(b_ptr + d)
    o0 = tl.zeros([N], dtype=tl.float32) + bias
    o1 = o0
    o2 = o0
    o3 = o0
    # Group q back holds the lags 4q - 3 .. 4q + 3; lag W - 1 is the farthest needed.
    for q in tl.static_range((W + 6) // 4):
        src = t - 4 * q
        group = tl.load(x_row + src, mask=(src >= 0) & (src < S), other=0.0)
        cols = columns(group)
        o0 = add_taps(o0, cols, w_row, W, q, 0)
        o1 = add_taps(o1, cols, w_row, W, q, 1)
        o2 = add_taps(o2, cols, w_row, W, q, 2)
        o3 = add_taps(o3, cols, w_row, W, q, 3)
    # join(join(o0, o2), join(o1, o3))[n, i, j] is o(2i + j): back to [N, 4] in order.
    out = tl.join(tl.join(o0, o2), tl.join(o1, o3)).reshape(N, 4)
    tl.store(out_ptr + row_start + t, out, mask=t < S)


CUDA_SOURCE = r"""
// Zeros where not valid. asm volatile keeps every group's load ahead of the first shuffle that waits on
// one, and the zero fill keeps ptxas from sinking a load beside its first use (results/NOTES.md v17).
// EF: evict-first in L1 and L2 (.cs), since each group of x is read once.
template <bool EF>
__device__ __forceinline__ float4 load_group(const float4* p, bool valid) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (EF)
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
                 " @p ld.global.cs.nc.v4.f32 {%0, %1, %2, %3}, [%4];\n}\n"
                 : "+f"(v.x), "+f"(v.y), "+f"(v.z), "+f"(v.w) : "l"(p), "r"((int)valid));
  else
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
                 " @p ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];\n}\n"
                 : "+f"(v.x), "+f"(v.y), "+f"(v.z), "+f"(v.w) : "l"(p), "r"((int)valid));
  return v;
}

__device__ __forceinline__ float4 shuffle_group(float4 v, int src) {
  return make_float4(__shfl_sync(0xffffffffu, v.x, src), __shfl_sync(0xffffffffu, v.y, src),
                     __shfl_sync(0xffffffffu, v.z, src), __shfl_sync(0xffffffffu, v.w, src));
}

// Each warp owns a span of V * 32 consecutive groups of 4 in one row, and at each v its lanes hold 32
// consecutive groups (one 512-byte span). Group g - q of lane l is lane l - q's at the same v or, for the
// first q lanes, lane 32 - q + l's at v - 1; only at v = 0 do lanes < q load it (the groups just before the
// warp's span). Where the spans go:
// ROWS false: a block's warps take consecutive spans in x's flat order, so where a row is shorter than a
//   block the block covers several rows and no lane is left masked; a warp finds its row with a shift where
//   a row's spans are a power of two, else with a division.
// ROWS true: the grid is (blocks along a row, D, B) and a block stays in one row, so the row and d come
//   with the block and no division comes before the first load (NOTES v34: at one group a thread the
//   divisions were half the instructions before it).
template <int W, int V, bool EF, bool ROWS>
__global__ void causal_conv1d_shuffle(const float* __restrict__ x, const float* __restrict__ weight,
                                      const float* __restrict__ bias, float* __restrict__ out,
                                      int D, int S, int spans_code, int spans) {
  constexpr int Q = (W + 2) / 4;  // groups back that the W - 1 left neighbours reach
  const int groups = S >> 2;
  const int lane = threadIdx.x & 31;
  const unsigned warp_span = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  unsigned row, span_in_row;
  int d;
  // spans_code: a row's spans, as their log2 where they are a power of two, else negated. It rides in one of
  // the eight parameter words: a ninth starts a new line of the constant bank, which every block may wait
  // for from a cold L2 before its first load (NOTES v38, v38d: the likeliest reading, not a settled one).
  if (ROWS) {
    // No guard: launch_cuda takes the row grid only where a row's spans fill whole blocks, and a spare warp
    // would find its groups past the row's end, where its stores and its loads there are predicated off.
    d = blockIdx.y;
    row = blockIdx.z * gridDim.y + blockIdx.y;
    span_in_row = warp_span;
  } else {
    if (warp_span >= (unsigned)spans) return;  // the last block's spare warps leave whole, so every shuffle has its 32 lanes
    if (spans_code >= 0) {  // a shift, not a division, on the first load's path
      row = warp_span >> spans_code;
      span_in_row = warp_span & ((1u << spans_code) - 1u);
    } else {
      row = warp_span / (unsigned)-spans_code;
      span_in_row = warp_span - row * (unsigned)-spans_code;
    }
    d = (int)(row % (unsigned)D);
  }
  const float4* x_row = reinterpret_cast<const float4*>(x) + (long long)row * groups;
  float4* out_row = reinterpret_cast<float4*>(out) + (long long)row * groups;
  const int first = (int)span_in_row * (32 * V) + lane;  // this lane's group at v = 0
  const int ahead = groups - first;  // groups from this lane's first to the row's end: group v is in the row if 32v < ahead

  float w[W];
#pragma unroll
  for (int k = 0; k < W; ++k) w[k] = weight[d * W + k];
  const float b = bias[d];
  float4 cur[V];
#pragma unroll
  for (int v = 0; v < V; ++v) cur[v] = load_group<EF>(x_row + first + 32 * v, 32 * v < ahead);
  float4 edge[Q > 0 ? Q : 1];
#pragma unroll
  for (int q = 1; q <= Q; ++q) edge[q - 1] = load_group<EF>(x_row + first - q, lane < q && first - q >= 0 && first - q < groups);

#pragma unroll
  for (int v = 0; v < V; ++v) {
    float e[4 * Q + 4];  // e[4Q + i] = x[4g + i], i in [-4Q, 3]
#pragma unroll
    for (int q = 1; q <= Q; ++q) {
      float4 p = shuffle_group(v > 0 && lane >= 32 - q ? cur[v > 0 ? v - 1 : 0] : cur[v], (lane - q) & 31);
      if (v == 0 && lane < q) p = edge[q - 1];
      e[4 * (Q - q) + 0] = p.x;
      e[4 * (Q - q) + 1] = p.y;
      e[4 * (Q - q) + 2] = p.z;
      e[4 * (Q - q) + 3] = p.w;
    }
    e[4 * Q + 0] = cur[v].x;
    e[4 * Q + 1] = cur[v].y;
    e[4 * Q + 2] = cur[v].z;
    e[4 * Q + 3] = cur[v].w;
    float r[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float acc = b;
#pragma unroll
      for (int k = 0; k < W; ++k) acc = fmaf(w[k], e[4 * Q + j - (W - 1) + k], acc);
      r[j] = acc;
    }
    if (32 * v < ahead) out_row[first + 32 * v] = make_float4(r[0], r[1], r[2], r[3]);
  }
}
"""


@functools.lru_cache(maxsize=None)
def cuda_kernel(device_index: int, W: int, V: int, evict_first: bool, row_grid: bool):
    """The CUDA kernel for one width, groups a thread, load hint and grid, built by NVRTC once per process and device."""
    with torch.cuda.device(device_index):
        return torch.cuda._compile_kernel(
            CUDA_SOURCE, f"causal_conv1d_shuffle<{W}, {V}, {str(evict_first).lower()}, {str(row_grid).lower()}>")


def cuda_serves(x, weight, out) -> bool:
    """Rows of whole 16-byte groups, aligned; a halo within a warp's reach; a torch with NVRTC's entry point."""
    return (x.is_cuda and x.shape[-1] % 4 == 0 and x.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0
            and weight.shape[1] <= 129 and hasattr(torch.cuda, "_compile_kernel"))


def launch_cuda(x, weight, bias, out, block: int, num_warps: int, evict_first: bool = False) -> None:
    """BLOCK outputs a block of num_warps warps: V groups of 4 a thread, a warp's V * 128 outputs in one row."""
    B, D, S = x.shape
    V = max(1, block // (128 * num_warps))
    spans_per_row = -(-S // (128 * V))
    spans = B * D * spans_per_row
    row_grid = rows_grid(B, D, spans_per_row, V, num_warps)
    grid = (spans_per_row // num_warps, D, B) if row_grid else (-(-spans // num_warps), 1, 1)
    shift = spans_per_row.bit_length() - 1
    spans_code = shift if 1 << shift == spans_per_row else -spans_per_row
    cuda_kernel(x.device.index or 0, weight.shape[1], V, evict_first, row_grid)(
        grid=grid, block=(32 * num_warps, 1, 1), args=[x, weight, bias, out, D, S, spans_code, spans])


def rows_grid(B: int, D: int, spans_per_row: int, V: int, num_warps: int) -> bool:
    """The (blocks along a row, D, B) grid where a row's spans fill whole blocks and B and D fit the grid's y
    and z, at up to 4 groups a thread, the tiles it was timed at beside the flat walk at the same tile. H100
    run64: 0.3-0.4% under at 2048/16 on both large shapes, 0.6-3.2% under at all but 512/1 on the S = 2048
    cases. H100 run99/run100 (order alternated): level at CUDA 1024/2 on 1x1536x2048, 0.7-0.9% under at
    2048/16 there, 2.4-2.8% under at CUDA 1024/2 on 1x2560x2048, 0.1-0.3% under on 4x2560x4096. H100
    run110/run111: level at evict-first 1024/2 on 1x1536x2048, where run99/run100 put it 0.9% over (that was
    the machine), and at most 0.45% over at any tile timed. Not split out on the H200. The 8- and 16-group
    tiles keep the flat walk, which packs short rows into a block; the 16-group tiles are the leaderboard
    cases' picks."""
    return V <= 4 and spans_per_row % num_warps == 0 and B <= MAX_GRID_YZ and D <= MAX_GRID_YZ


@functools.lru_cache(maxsize=None)
def gpu_key(device_index: int) -> str:
    name = torch.cuda.get_device_name(device_index).lower()
    for key in ("b200", "h200", "h100"):
        if key in name:
            return key
    return name


def gpu_of(x) -> str:
    """The config tables' name for the device x lives on: 'b200', 'h200', 'h100', another GPU's name, or 'cpu'."""
    return gpu_key(x.device.index or 0) if x.device.type == "cuda" else "cpu"


def heuristic_config(B: int, D: int, S: int, W: int) -> tuple[int, int]:
    """One warp per program and up to 1024 outputs (eight 16-byte groups per thread in flight), never
    more than the row needs: the H200's winner on every leaderboard case."""
    return max(64, min(1024, triton.next_power_of_2(S))), 1


def launch(x, weight, bias, out, block: int, num_warps: int, build: str | None = None) -> None:
    """One config: the CUDA kernel where build is one of CUDA_BUILDS and it serves these tensors, else the Triton one."""
    if build in CUDA_BUILDS:
        if cuda_serves(x, weight, out):
            return launch_cuda(x, weight, bias, out, block, num_warps, build == CUDA_EF)
        build = None
    B, D, S = x.shape
    chunks_per_row = triton.cdiv(S, block)
    extra = {"ptx_options": build} if build else {}
    causal_conv1d_kernel[(B * D * chunks_per_row,)](
        x, weight, bias, out, D, S, chunks_per_row, W=weight.shape[1], BLOCK=block, num_warps=num_warps, **extra)


# ----------------------------------------------------------------------------- the first-call search

tuned = {}  # (gpu, B, D, S, W) -> (BLOCK, num_warps, build): configs only


def capturing(device) -> bool | None:
    """True inside a CUDA-graph capture, False outside, None where this torch cannot tell.

    torch 2.13 answers directly. Older ones are asked where a fresh allocation lands: during a
    capture the caching allocator serves it from the graph's private pool, whose id is not (0, 0).
    (torch's own capture query has a name the server rejects, so it cannot be called here.)
    """
    probe = getattr(torch.cuda.CUDAGraph, "get_currently_capturing_graph", None)
    if probe is not None:
        try:
            return probe() is not None
        except RuntimeError:  # raised when no capture is under way
            return False
    try:
        marker = torch.empty(1, device=device)
        address = marker.data_ptr()
        for segment in torch.cuda.memory._snapshot()["segments"]:
            if segment["address"] <= address < segment["address"] + segment["total_size"]:
                return tuple(segment["segment_pool_id"]) != (0, 0) if "segment_pool_id" in segment else None
    except Exception:  # a torch whose snapshot reads differently: no answer, so no search
        return None
    return None


def tune_candidates(B: int, D: int, S: int, W: int) -> list[tuple[int, int, str | None]]:
    """At most MAX_CANDIDATES configs: the heuristic first, up to MAX_ACF control files on it, the CUDA
    tiles, then the Triton runners-up."""
    base = heuristic_config(B, D, S, W)
    acf = [(*base, f"--apply-controls {path}") for path in sorted(glob.glob(ACF_GLOB))][:MAX_ACF]
    cuda = list(CUDA_CANDIDATES)
    others = [(block, warps, None) for block, warps in CANDIDATES if (block, warps) != base]
    return ([(*base, None)] + acf + cuda + others)[:MAX_CANDIDATES]


def formula(x, weight, bias):
    """The task's formula as W shifted multiply-adds in torch: what every candidate must match."""
    W, S = weight.shape[1], x.shape[-1]
    padded = torch.nn.functional.pad(x, (W - 1, 0))
    out = bias[:, None] + weight[:, 0, None] * padded[..., 0:S]
    for k in range(1, W):
        out = out + weight[:, k, None] * padded[..., k:k + S]
    return out


def sample_orders(runs: int, samples: int) -> list[list[int]]:
    """The order the runs are timed in, a list a sample: sample s starts at run s (mod runs), so no run
    is timed first in more than one sample of every `runs`, and each holds each place alike."""
    return [[(sample + place) % runs for place in range(runs)] for sample in range(samples)]


def graph_timer(device):
    """The leaderboard's timing in small, for several runs at once: per run a graph of 100 (flush; call),
    one graph of 100 flushes, the difference, the median of six samples.

    The runs' samples interleave (sample s of every run, then s + 1), so whatever changes in the GPU's
    state while they are timed falls on every run alike: on the H200 a fresh process timed its first
    candidate at the sweep's value and every later one 1.5-4% slow when each was timed whole in turn
    (results/NOTES.md v11c). Each sample also starts one run later (sample_orders), so no run holds the
    first place in more than one sample and the median drops that one. (Interleaved, the run timed first
    read 1.6% nearer its sweep time than the rest in one process of run36; rotated, the heuristic still
    did in run37: a Triton tile against CUDA ones, not the place. The two timers rank alike, NOTES v22.)
    Before the first sample the GPU is kept busy for WARM_UP_S. In every sample the flush graph runs
    first, as in the protocol: on the H200 the full graph read 0.2-0.45 us a call slower when it ran
    first (NOTES v13)."""
    flush = torch.empty(FLUSH_INT64S, dtype=torch.int64, device=device)

    def capture(run, calls):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                flush.zero_()
                if run is not None:
                    run()
        graph.replay()  # a graph's first replay uploads it: never a sample
        return graph

    def timed_us(runs, calls: int = 100, samples: int = 6) -> list[float]:
        flush_only = capture(None, calls)
        fulls = [capture(run, calls) for run in runs]
        began = time.perf_counter()
        while time.perf_counter() - began < WARM_UP_S:
            flush_only.replay()
            torch.cuda.synchronize()
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        timings = [[] for _ in runs]
        for order in sample_orders(len(runs), samples):
            for index in order:
                full, times = fulls[index], timings[index]
                marks[0].record()
                flush_only.replay()
                marks[1].record()
                full.replay()
                marks[2].record()
                marks[2].synchronize()
                times.append((marks[1].elapsed_time(marks[2]) - marks[0].elapsed_time(marks[1])) * 1e3 / calls)
        return [(sorted(t)[(samples - 1) // 2] + sorted(t)[samples // 2]) / 2 for t in timings]
    return timed_us


def config_name(config) -> str:
    """(BLOCK, num_warps, build) -> '1024/1', '1024/1 cuda', '1024/1 cuda-ef', or with the control file's name where one is applied."""
    block, warps, build = config
    return f"{block}/{warps}" + (f" {os.path.basename(build.split()[-1])}" if build else "")


def check_candidate(config, x, weight, bias, out, expected) -> str:
    """'' where the config builds, runs and matches the formula on this input (out is written), else why not."""
    out.fill_(math.nan)  # poisoned: an unwritten element fails the check
    if config[2] in CUDA_BUILDS and not cuda_serves(x, weight, out):  # it would time the Triton tile twice
        return "the CUDA kernel does not serve this input"
    try:
        # Triton prints a failed build's whole PTX reproducer to stdout; a dropped candidate is one line
        with contextlib.redirect_stdout(io.StringIO()):
            launch(x, weight, bias, out, *config)
        if x.is_cuda:
            torch.cuda.synchronize()
    except Exception as error:  # a candidate that fails to compile or launch is dropped, never chosen
        return f"build error ({type(error).__name__})"
    if not bool(((out - expected).abs() <= ATOL + RTOL * expected.abs()).all()):
        return "mismatch"
    return ""


def decisive_times(record: dict) -> tuple:
    """The times a pick is made on and their margin: the finalists' re-timing within RETIME_MARGIN where there
    was one (its spread across processes is ~0.1-0.3%, H100 run51), else the first timing within TUNE_MARGIN."""
    if record.get("retimed"):
        return record["retimed"], RETIME_MARGIN
    return record["timed"], TUNE_MARGIN


def search_record(key, x, weight, bias, timer) -> dict:
    """Check every candidate (it builds and matches the formula on this input), then time the ones that
    passed together, their samples interleaved (timer(runs, samples=...) -> microseconds a run); time the
    finalists, those within FINAL_BAND of the fastest, again together with RETIME_SAMPLES samples; the pick
    is the first candidate within the margin of the fastest in the deciding times (decisive_times), so the
    heuristic, timed first, stays unless beaten by more. Returns the record: the pick, each timed candidate's
    microseconds, the finalists' re-timed microseconds, and each dropped candidate with why.

    Builds come first, so none leaves the GPU idle between samples (each takes up to a second), and
    the timing interleaves the candidates' samples: on the H200 every candidate timed whole after the
    first read 1.5-4% slow against the same candidate in a sweep (results/NOTES.md v11c). Builds stop
    at half the budget; the timing of those built takes the rest (at most ~6 s, on 8x4096x8192), and the
    finalists' re-timing at most as long again."""
    began = time.perf_counter()
    expected = formula(x, weight, bias)
    out = torch.empty_like(x)  # one output for all, so no candidate is timed on a different placement
    passed, timed, retimed, dropped, retime_error = [], [], [], [], None
    for config in tune_candidates(*key[1:]):
        if passed and time.perf_counter() - began > TUNE_BUDGET_S / 2:
            dropped.append((config, "over the time budget"))
            continue
        problem = check_candidate(config, x, weight, bias, out, expected)
        if problem:
            dropped.append((config, problem))
        else:
            passed.append(config)
    runs = {config: functools.partial(launch, x, weight, bias, out, *config) for config in passed}
    if passed:
        try:
            timed = list(zip(passed, timer([runs[config] for config in passed])))
        except Exception as error:  # a capture or replay that fails: nothing is timed, the heuristic stays
            dropped.extend((config, f"timing error ({type(error).__name__})") for config in passed)
    fastest_us = min((us for _, us in timed), default=0.0)
    near = sorted((us, index) for index, (_, us) in enumerate(timed) if us <= fastest_us * (1 + FINAL_BAND))
    finalists = [timed[index][0] for index in sorted(index for _, index in near[:MAX_FINALISTS])]  # in the list's order
    if len(finalists) > 1:
        try:
            retimed = list(zip(finalists, timer([runs[config] for config in finalists], samples=RETIME_SAMPLES)))
        except Exception as error:  # the first timing stands, and the line says so
            retime_error = type(error).__name__
    heuristic = (*heuristic_config(*key[1:]), None)
    record = {"key": key, "heuristic": heuristic, "pick": heuristic, "timed": timed, "retimed": retimed,
              "retime_error": retime_error, "dropped": dropped, "acf_files": sorted(glob.glob(ACF_GLOB))}
    decisive, margin = decisive_times(record)
    if decisive:
        # The first candidate in the list's order within the margin of the fastest: the heuristic where it
        # is that close, and of near-equal others the same one in every process (H200 run40: on
        # 1x2560x4096 2048/1 cuda read 0.2-0.3% under 4096/2 cuda, and all three processes took 4096/2).
        fastest_us = min(us for _, us in decisive)
        record["pick"] = next(config for config, us in decisive if us <= fastest_us * (1 + margin))
    record["seconds"] = time.perf_counter() - began
    return record


def pick_line(record: dict) -> str:
    """The search's one line: the pick and why, what was timed, re-timed and dropped, which control files were found."""
    key, pick, heuristic = record["key"], record["pick"], record["heuristic"]
    us = dict(record["timed"])
    decisive, margin = decisive_times(record)
    decisive = dict(decisive)
    if not us:
        why = "the heuristic: no candidate could be timed"
    else:
        fastest = min(decisive, key=decisive.get)
        near = ("" if fastest == pick else f"the fastest, {config_name(fastest)}, was "
                f"{1 - decisive[fastest] / decisive[pick]:.2%} faster, inside the {margin * 100:g}% margin")
        if heuristic not in us:
            why = f"{near or 'the fastest'}; the heuristic {config_name(heuristic)} was dropped"
        elif pick == heuristic:
            why = f"the heuristic: {near}" if near else "the heuristic, the fastest"
        else:
            why = f"{1 - us[pick] / us[heuristic]:.2%} faster than the heuristic {config_name(heuristic)}" + (near and f"; {near}")
    retimed = (f"; {len(record['retimed'])} within {FINAL_BAND:.0%} of the fastest re-timed" if record.get("retimed") else "")
    if record.get("retime_error"):
        retimed = f"; re-timing failed ({record['retime_error']}), the first timing kept"
    dropped = ", ".join(f"{config_name(config)} ({reason})" for config, reason in record["dropped"]) or "none"
    acf = ", ".join(os.path.basename(path) for path in record["acf_files"]) or "none found"
    return (f"causal_conv1d: {key[0]} {'x'.join(map(str, key[1:]))}: BLOCK={pick[0]} num_warps={pick[1]}"
            f"{' ' + pick[2] if pick[2] else ''} ({why}); {len(record['timed'])} of "
            f"{len(record['timed']) + len(record['dropped'])} candidates timed in {record['seconds']:.1f} s{retimed}; "
            f"dropped: {dropped}; control files: {acf}")


@functools.lru_cache(maxsize=None)
def tune_switch(value: str) -> bool:
    """CAUSAL_CONV1D_TUNE's word: the usual words for off and on; any other value is said once and leaves it on."""
    word = value.strip().lower()
    if word not in TUNE_WORDS:
        print(f"causal_conv1d: {TUNE_ENV}={value!r} is not a word for on or off (0/off/false/no, 1/on/true/yes);"
              " the first-call search stays on", file=sys.stderr)
    return TUNE_WORDS.get(word, True)


def searchable(x) -> bool | None:
    """A large shape on a GPU, outside a capture, with the search not switched off; None where this
    torch cannot tell a capture (then the heuristic, for good)."""
    if x.device.type != "cuda" or x.numel() < TUNE_MIN_OUTPUTS or not tune_switch(os.environ.get(TUNE_ENV, "1")):
        return False
    in_capture = capturing(x.device)
    return None if in_capture is None else not in_capture


def choose(gpu: str, x, weight, bias) -> tuple[int, int, str | None]:
    """The table's entry; else, for a searchable call, the first call's pick; else the heuristic."""
    B, D, S = x.shape
    key = (gpu, B, D, S, weight.shape[1])
    if key in CONFIGS:
        return (*CONFIGS[key], None)[:3]
    if key in tuned:
        return tuned[key]
    can_search = searchable(x)
    if can_search is None:  # remembered, so later calls skip the probe
        tuned[key] = (*heuristic_config(*key[1:]), None)
    elif can_search:
        record = search_record(key, x, weight, bias, graph_timer(x.device))
        print(pick_line(record), file=sys.stderr)
        tuned[key] = record["pick"]
    return tuned.get(key) or (*heuristic_config(*key[1:]), None)


def tile_for(data) -> tuple[int, int]:
    """The (BLOCK, num_warps) custom_kernel launches for this input, so tools can time a copy at the same tile."""
    x, weight, bias = data
    return choose(gpu_of(x), x, weight, bias)[:2]


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
    if x.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(f"tensors on {x.device} need a CUDA device (or TRITON_INTERPRET=1 on the CPU)")


def custom_kernel(data: input_t) -> output_t:
    validate(data)
    x, weight, bias = (t.contiguous() for t in data)
    out = torch.empty_like(x)
    if out.numel() == 0:
        return out
    launch(x, weight, bias, out, *choose(gpu_of(x), x, weight, bias))
    return out
