"""submission.py: right on every shape the runner may send, and clear about bad input."""
import re

import pytest
import torch

import reference
import submission
from conftest import DEVICE, conv_float64, make_inputs, task_shapes

TASK_TESTS = task_shapes("tests")
# Hidden-shape style: S < W, W = 1, 8 and 16, D = 1, B > 1, odd and non-multiple-of-4 sizes,
# rows longer than one program's block (several chunks a row).
RANDOM_SHAPES = [
    (1, 3, 2, 4), (2, 2, 1, 3), (1, 2, 5, 8), (1, 1, 7, 16),  # S < W
    (1, 4, 37, 1), (2, 3, 64, 1),  # W = 1
    (1, 3, 45, 8), (2, 2, 100, 16),  # wide W, several groups back
    (1, 1, 2500, 4), (3, 1, 33, 4),  # D = 1, several chunks a row
    (3, 5, 131, 4), (2, 7, 1030, 3), (1, 6, 257, 5), (5, 3, 19, 2),  # odd sizes
]


def check(data):
    out = submission.custom_kernel(data)
    assert out.shape == data[0].shape and out.dtype == torch.float32
    torch.testing.assert_close(out.double().cpu(), conv_float64(*data), rtol=1e-4, atol=1e-4)
    return out


@pytest.mark.parametrize("B,D,S,W", TASK_TESTS)
def test_task_test_shapes(B, D, S, W):
    check(make_inputs(B, D, S, W, seed=S + W))


@pytest.mark.parametrize("B,D,S,W", RANDOM_SHAPES)
def test_random_shapes(B, D, S, W):
    check(make_inputs(B, D, S, W, seed=B * 1000 + D * 10 + S))


def test_non_contiguous_inputs_are_handled():
    x, weight, bias = make_inputs(2, 6, 40, 4, seed=9)
    x_strided = x.transpose(1, 2).contiguous().transpose(1, 2)  # same values, channels-last strides
    weight_strided = weight.t().contiguous().t()
    assert not x_strided.is_contiguous() and not weight_strided.is_contiguous()
    check((x_strided, weight_strided, bias))


def test_inputs_are_left_untouched_and_the_output_is_fresh():
    data = make_inputs(1, 4, 50, 4, seed=10)
    before = [t.clone() for t in data]
    out = check(data)
    assert all(torch.equal(a, b) for a, b in zip(before, data))
    assert all(out.data_ptr() != t.data_ptr() for t in data)


def test_two_calls_on_different_inputs_each_get_their_own_answer():
    first = make_inputs(1, 4, 64, 4, seed=11)
    second = make_inputs(1, 4, 64, 4, seed=12)
    check(first)
    check(second)


def test_empty_sequence_gives_an_empty_output():
    x, weight, bias = make_inputs(1, 3, 1, 4)
    out = submission.custom_kernel((x[:, :, :0], weight, bias))
    assert out.shape == (1, 3, 0)


def _valid():
    return make_inputs(1, 4, 16, 4)


@pytest.mark.parametrize("mutate,message", [
    (lambda x, w, b: (x.double(), w, b), "x must be float32"),
    (lambda x, w, b: (x, w.half(), b), "weight must be float32"),
    (lambda x, w, b: (x[0], w, b), "x must have 3 dimensions"),
    (lambda x, w, b: (x, w[:, :, None], b), "weight must have 2 dimensions"),
    (lambda x, w, b: (x, w[:3], b), "weight is [3, W] but x has D = 4"),
    (lambda x, w, b: (x, w[:, :0], b), "W must be >= 1"),
    (lambda x, w, b: (x, w, b[:2]), "bias has 2 entries but x has D = 4"),
    (lambda x, w, b: (x, w, b.tolist()), "bias must be a torch.Tensor"),
    (lambda x, w, b: (x, w), "expects data = (x, weight, bias)"),
])
def test_bad_input_raises_a_value_error_naming_the_problem(mutate, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        submission.custom_kernel(mutate(*_valid()))


def test_cpu_tensors_without_the_interpreter_are_refused(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x, weight, bias = make_inputs(1, 2, 8, 4, device="cpu")
    with pytest.raises(ValueError, match="need a CUDA device"):
        submission.custom_kernel((x, weight, bias))


def test_config_table_holds_only_exceptions_to_the_heuristic():
    for key, config in submission.CONFIGS.items():
        gpu, B, D, S, W = key
        block, warps, build = (*config, None)[:3]
        assert isinstance(gpu, str) and min(B, D, S, W) >= 1
        assert block & (block - 1) == 0 and block >= 64, key
        assert warps in (1, 2, 4, 8) and build in (None, *submission.CUDA_BUILDS), key
        assert (block, warps, build) != (*submission.heuristic_config(B, D, S, W), None), f"{key} repeats the heuristic"


@pytest.mark.parametrize("S", [1, 3, 64, 1000, 2048, 100000])
def test_heuristic_config_fits_the_row(S):
    block, warps = submission.heuristic_config(1, 8, S, 4)
    assert block & (block - 1) == 0 and 64 <= block <= 1024
    assert block <= max(64, 2 * S)
    assert warps == 1


def test_a_table_entry_wins_over_the_search_and_the_heuristic(monkeypatch):
    x, weight, bias = make_inputs(1, 2, 40, 4)
    monkeypatch.setitem(submission.CONFIGS, ("cpu", 1, 2, 40, 4), (256, 2))
    monkeypatch.setattr(submission, "searchable", lambda x: pytest.fail("searched despite a table entry"))
    assert submission.choose("cpu", x, weight, bias) == (256, 2, None)


# ----------------------------------------------------------------------------- the first-call search


def test_candidates_put_the_heuristic_first_then_three_acf_files_then_the_cuda_tiles(tmp_path, monkeypatch):
    names = [f"causal_conv_{i}.acf" for i in range(5)]
    for name in names:
        (tmp_path / name).write_text("")
    monkeypatch.setattr(submission, "ACF_GLOB", str(tmp_path / "*.acf"))
    candidates = submission.tune_candidates(1, 2560, 4096, 4)
    assert len(candidates) == submission.MAX_CANDIDATES and len(set(candidates)) == len(candidates)
    assert candidates[0] == (1024, 1, None)
    assert candidates[1:4] == [(1024, 1, f"--apply-controls {tmp_path / n}") for n in names[:3]]
    cuda = [c for c in candidates if c[2] in submission.CUDA_BUILDS]
    assert cuda == submission.CUDA_CANDIDATES[:len(cuda)] and candidates[4] == cuda[0]
    monkeypatch.setattr(submission, "ACF_GLOB", str(tmp_path / "none" / "*.acf"))
    without_acf = submission.tune_candidates(1, 2560, 4096, 4)
    assert all(build in (None, *submission.CUDA_BUILDS) for _, _, build in without_acf)
    assert [c for c in without_acf if c[2] in submission.CUDA_BUILDS] == submission.CUDA_CANDIDATES  # all of them
    assert {build for _, _, build in submission.CUDA_CANDIDATES} == set(submission.CUDA_BUILDS)


@pytest.mark.parametrize("build", submission.CUDA_BUILDS)
def test_a_cuda_config_takes_the_triton_kernel_where_the_cuda_one_does_not_serve(build):
    """On the CPU (the interpreter) and on rows that are not whole 16-byte groups, a CUDA config runs
    the Triton kernel at the same tile, so a pick made on one input is right on any other of its shape."""
    for B, D, S, W in [(1, 3, 300, 4), (1, 3, 37, 4)]:
        x, weight, bias = make_inputs(B, D, S, W, seed=S)
        out = torch.full_like(x, float("nan"))
        submission.launch(x, weight, bias, out, 256, 1, build)
        torch.testing.assert_close(out.double().cpu(), conv_float64(x, weight, bias), rtol=1e-4, atol=1e-4)


# Rows longer than a block, rows shorter than one (a block spans several rows, channels and batches), rows
# that end inside a warp's span, and a last block with spare warps.
CUDA_SHAPES = [(1, 3, 300), (2, 5, 4096), (1, 2, 36), (3, 5, 512), (2, 7, 2048), (1, 3, 1000)]


def test_launch_cuda_gives_each_grid_a_block_for_every_span_and_the_gpu_tests_shapes_reach_both(monkeypatch):
    """launch_cuda with a recording stand-in for the NVRTC build: the row grid has exactly a row's spans
    along x and D, B along y, z; the flat walk covers every span; CUDA_SHAPES run both grids on the GPU."""
    launches = []

    def recording_build(device_index, W, V, evict_first, row_grid):
        return lambda grid, block, args: launches.append((V, row_grid, grid, block, args))

    monkeypatch.setattr(submission, "cuda_kernel", recording_build)
    grids = {True: set(), False: set()}
    flat_rows = set()
    for B, D, S in CUDA_SHAPES:
        x, weight, bias = make_inputs(B, D, S, 4, seed=1)
        for block, warps in submission.CUDA_TILES:
            submission.launch_cuda(x, weight, bias, torch.empty_like(x), block, warps)
            V, row_grid, grid, threads, args = launches[-1]
            spans_per_row = -(-S // (128 * V))
            assert V == max(1, block // (128 * warps)) and threads == (32 * warps, 1, 1)
            spans_code, spans = args[-2:]
            assert spans == B * D * spans_per_row
            if row_grid:
                assert grid == (spans_per_row // warps, D, B) and grid[0] * warps == spans_per_row
            else:
                assert grid[1:] == (1, 1) and 0 <= grid[0] * warps - B * D * spans_per_row < warps
                # what the kernel's flat walk does with the code: every warp's row and span in it
                for warp_span in range(spans):
                    if spans_code >= 0:
                        found = (warp_span >> spans_code, warp_span & ((1 << spans_code) - 1))
                    else:
                        found = divmod(warp_span, -spans_code)
                    assert found == divmod(warp_span, spans_per_row)
                flat_rows.add("shift 0" if spans_code == 0 else "shift" if spans_code > 0 else "division")
            grids[row_grid].add(V)
    assert grids == {True: {1, 2, 4}, False: {1, 2, 4, 8, 16}}
    assert flat_rows == {"shift 0", "shift", "division"}


@pytest.mark.parametrize("B, D, spans_per_row, V, warps, row_grid", [
    (4, 2560, 32, 1, 16, True),     # 4x2560x4096 at 2048/16: two blocks a row
    (8, 4096, 32, 2, 8, True),      # 8x4096x8192 at 2048/8
    (1, 2560, 8, 4, 2, True),       # 1x2560x4096 at 1024/2, where one process of run65's search took it
    (1, 2560, 1, 16, 1, False),     # 16 groups a thread: the leaderboard cases' picks keep the flat walk
    (1, 2560, 2, 8, 1, False),
    (1, 1536, 8, 1, 16, False),     # 1x1536x1024 at 2048/16: half of each block would idle
    (1, 70000, 32, 1, 16, False),   # D past the grid's y
    (70000, 2, 32, 1, 16, False),   # B past its z
], ids=["large-2048/16", "large-2048/8", "1024/2", "V16", "V8", "short-row", "D-too-large", "B-too-large"])
def test_the_row_grid_serves_up_to_four_groups_a_thread_where_a_rows_spans_fill_whole_blocks(
        B, D, spans_per_row, V, warps, row_grid):
    assert submission.rows_grid(B, D, spans_per_row, V, warps) is row_grid


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the CUDA kernel, built by NVRTC); none is visible")
@pytest.mark.parametrize("evict_first", [False, True], ids=["plain-loads", "evict-first-loads"])
@pytest.mark.parametrize("W", [1, 2, 3, 4, 5, 8, 13])
def test_on_the_gpu_the_cuda_kernel_is_exact_at_every_tile(W, evict_first):
    """CUDA_SHAPES at every CUDA tile, both grids, both load hints."""
    for B, D, S in CUDA_SHAPES:
        x, weight, bias = make_inputs(B, D, S, W, seed=S + W)
        expected = conv_float64(x, weight, bias)
        for block, warps in submission.CUDA_TILES:
            out = torch.full_like(x, float("nan"))
            assert submission.cuda_serves(x, weight, out)
            submission.launch_cuda(x, weight, bias, out, block, warps, evict_first)
            torch.testing.assert_close(out.double().cpu(), expected, rtol=1e-4, atol=1e-4,
                                       msg=lambda m: f"{block}/{warps} on {B}x{D}x{S}x{W}: {m}")


def test_the_search_never_picks_a_candidate_that_is_wrong_or_does_not_build(monkeypatch, capsys):
    """Under the interpreter: a tile that cannot build and one that computes garbage are timed fastest
    by a fake timer, and neither may win."""
    x, weight, bias = make_inputs(1, 3, 300, 4, seed=5)
    monkeypatch.setattr(submission, "CANDIDATES", [(48, 1), (128, 1), (256, 1)])  # 48: not a power of two
    monkeypatch.setattr(submission, "CUDA_CANDIDATES", [])
    real_launch = submission.launch

    def launch(x, weight, bias, out, block, warps, ptx=None):
        real_launch(x, weight, bias, out, block, warps, ptx)
        if block == 256:
            out.add_(1.0)  # a wrong answer

    monkeypatch.setattr(submission, "launch", launch)
    timed = []

    def fake_timer(runs):
        for run in runs:
            run()
            timed.append(run)
        return [{0: 5.0, 1: 3.0}.get(index, 0.1) for index in range(len(runs))]

    record = submission.search_record(("cpu", 1, 3, 300, 4), x, weight, bias, fake_timer)
    assert record["pick"] == (128, 1, None) and len(timed) == 2  # the heuristic (512, 1) and 128; 48 and 256 dropped
    assert [config for config, _ in record["timed"]] == [(512, 1, None), (128, 1, None)]
    reasons = dict(record["dropped"])
    assert reasons[(256, 1, None)] == "mismatch" and reasons[(48, 1, None)].startswith("build error (")
    line = submission.pick_line(record)
    assert line.startswith("causal_conv1d: cpu 1x3x300x4: BLOCK=128 num_warps=1 (40.00% faster than the heuristic 512/1)")
    assert "2 of 4 candidates timed" in line and "256/1 (mismatch)" in line and "48/1 (build error (" in line


def test_the_search_checks_every_candidate_before_it_times_any(monkeypatch):
    """Builds leave the GPU idle; on the H200 a candidate timed after one read slow (NOTES v11c), so
    every launch of the checks comes before the timing, which takes every candidate that passed at once."""
    x, weight, bias = make_inputs(1, 3, 300, 4, seed=5)
    monkeypatch.setattr(submission, "CANDIDATES", [(128, 1), (256, 1), (1024, 1)])
    monkeypatch.setattr(submission, "CUDA_CANDIDATES", [])
    events = []
    real_launch = submission.launch
    monkeypatch.setattr(submission, "launch", lambda *args: events.append(("launch", args[4:6])) or real_launch(*args))

    def fake_timer(runs, samples=6):
        events.append(("timer", None))
        return [1.0] * len(runs)

    record = submission.search_record(("cpu", 1, 3, 300, 4), x, weight, bias, fake_timer)
    kinds = [kind for kind, _ in events]
    # the heuristic (512, 1) and the three runners-up, then one timing of all, then the four tied finalists' re-timing
    assert kinds == ["launch"] * 4 + ["timer", "timer"], kinds
    assert [tile for _, tile in events[:4]] == [(512, 1), (128, 1), (256, 1), (1024, 1)]
    assert len(record["timed"]) == 4 and not record["dropped"]


def test_the_builds_stop_at_half_the_budget_and_the_heuristic_is_always_timed(monkeypatch):
    x, weight, bias = make_inputs(1, 3, 300, 4, seed=5)
    monkeypatch.setattr(submission, "CANDIDATES", [(128, 1), (256, 1)])
    monkeypatch.setattr(submission, "CUDA_CANDIDATES", [])
    monkeypatch.setattr(submission, "TUNE_BUDGET_S", 0.0)
    record = submission.search_record(("cpu", 1, 3, 300, 4), x, weight, bias, lambda runs: [run() or 1.0 for run in runs])
    assert [config for config, _ in record["timed"]] == [(512, 1, None)]
    assert record["dropped"] == [((128, 1, None), "over the time budget"), ((256, 1, None), "over the time budget")]


def test_the_search_drops_every_cuda_tile_with_its_reason_where_the_cuda_kernel_does_not_serve():
    """S = 37 is no whole number of 16-byte groups: on the GPU as on the CPU, the CUDA tiles are dropped."""
    x, weight, bias = make_inputs(1, 3, 37, 4, seed=5)
    record = submission.search_record(("cpu", 1, 3, 37, 4), x, weight, bias, lambda runs, samples=6: [run() or 1.0 for run in runs])
    dropped = dict(record["dropped"])
    assert {c for c in dropped if c[2] in submission.CUDA_BUILDS} == set(submission.CUDA_CANDIDATES)
    assert set(dropped.values()) == {"the CUDA kernel does not serve this input"}
    assert all(config[2] is None for config, _ in record["timed"])


@pytest.mark.parametrize("name", ["RTOL", "ATOL"])
def test_the_search_checks_a_candidate_with_the_references_tolerance(name):
    assert getattr(submission, name) == getattr(reference, name)


def _record(timed, dropped=(), acf=()):
    heuristic = (1024, 1, None)
    record = {"key": ("h100", 1, 2560, 2048, 4), "heuristic": heuristic, "pick": heuristic, "timed": list(timed),
              "dropped": list(dropped), "acf_files": list(acf), "seconds": 1.25}
    if timed:  # the first within the margin of the fastest, written out here as the search's docstring says
        record["pick"] = next(c for c, us in timed if us <= min(u for _, u in timed) * (1 + submission.TUNE_MARGIN))
    return record


@pytest.mark.parametrize("timed,dropped,acf,says", [
    ([((1024, 1, None), 10.0), ((2048, 4, None), 9.96)], [], [],
     "BLOCK=1024 num_warps=1 (the heuristic: the fastest, 2048/4, was 0.40% faster, inside the 1% margin); "
     "2 of 2 candidates timed in 1.2 s; dropped: none; control files: none found"),
    ([((1024, 1, None), 10.0), ((1024, 1, "--apply-controls /opt/booster_pack/a.acf"), 9.5)], [], ["/opt/booster_pack/a.acf"],
     "BLOCK=1024 num_warps=1 --apply-controls /opt/booster_pack/a.acf (5.00% faster than the heuristic 1024/1); "
     "2 of 2 candidates timed in 1.2 s; dropped: none; control files: a.acf"),
    ([((2048, 2, None), 10.0)], [((1024, 1, None), "build error (RuntimeError)")], [],
     "BLOCK=2048 num_warps=2 (the fastest; the heuristic 1024/1 was dropped); 1 of 2 candidates timed in 1.2 s; "
     "dropped: 1024/1 (build error (RuntimeError))"),
    ([], [((1024, 1, None), "mismatch")], [],
     "BLOCK=1024 num_warps=1 (the heuristic: no candidate could be timed); 0 of 1 candidates timed"),
    ([((1024, 1, None), 10.0), ((4096, 2, "cuda"), 9.0), ((4096, 2, "cuda-ef"), 8.95)], [], [],
     "BLOCK=4096 num_warps=2 cuda (10.00% faster than the heuristic 1024/1; the fastest, 4096/2 cuda-ef, was 0.56% "
     "faster, inside the 1% margin); 3 of 3 candidates timed"),
    ([((2048, 2, None), 10.0), ((4096, 2, None), 9.95)], [((1024, 1, None), "mismatch")], [],
     "BLOCK=2048 num_warps=2 (the fastest, 4096/2, was 0.50% faster, inside the 1% margin; the heuristic 1024/1 "
     "was dropped)"),
], ids=["inside-margin", "acf-wins", "heuristic-dropped", "nothing-timed", "near-tie-to-the-earlier", "near-tie-heuristic-dropped"])
def test_the_pick_line_says_why_what_was_timed_and_dropped_and_which_control_files(timed, dropped, acf, says):
    line = submission.pick_line(_record(timed, dropped, acf))
    assert line.startswith("causal_conv1d: h100 1x2560x2048x4: ") and says in line, line


def test_the_pick_is_kept_for_the_process_and_the_search_can_be_switched_off(monkeypatch):
    x, weight, bias = make_inputs(1, 2, 40, 4)
    searched = []
    monkeypatch.setattr(submission, "tuned", {})
    monkeypatch.setattr(submission, "searchable", lambda x: True)
    monkeypatch.setattr(submission, "graph_timer", lambda device: None)
    monkeypatch.setattr(submission, "search_record", lambda key, *a: searched.append(key) or _record([((128, 1, None), 1.0)]))
    assert submission.choose("cpu", x, weight, bias) == (128, 1, None)
    assert submission.choose("cpu", x, weight, bias) == (128, 1, None)
    assert len(searched) == 1  # once per (GPU, shape); only the config is kept
    assert submission.tuned == {("cpu", 1, 2, 40, 4): (128, 1, None)}

    monkeypatch.undo()
    big = torch.empty(1, 1, submission.TUNE_MIN_OUTPUTS)
    monkeypatch.setenv(submission.TUNE_ENV, "0")
    assert submission.searchable(big.cuda() if torch.cuda.is_available() else big) is False
    assert submission.searchable(torch.empty(1, 2, 40)) is False  # small shapes and CPU tensors: the heuristic


def test_where_torch_cannot_tell_a_capture_the_heuristic_is_kept_without_asking_again(monkeypatch):
    x, weight, bias = make_inputs(1, 2, 40, 4)
    asked = []
    monkeypatch.setattr(submission, "tuned", {})
    monkeypatch.setattr(submission, "searchable", lambda x: asked.append(1))  # None: cannot tell
    monkeypatch.setattr(submission, "search_record", lambda *a: pytest.fail("searched without knowing"))
    heuristic = (*submission.heuristic_config(1, 2, 40, 4), None)
    assert submission.choose("cpu", x, weight, bias) == heuristic
    assert submission.choose("cpu", x, weight, bias) == heuristic
    assert len(asked) == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (graph capture); none is visible")
def test_inside_a_capture_the_kernel_takes_the_heuristic_without_searching(monkeypatch):
    monkeypatch.setattr(submission, "tuned", {})
    monkeypatch.setattr(submission, "search_record", lambda *a: pytest.fail("searched inside a capture"))
    x, weight, bias = make_inputs(1, 64, 1 << 14, 4)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = submission.custom_kernel((x, weight, bias))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out.double().cpu(), conv_float64(x, weight, bias), rtol=1e-4, atol=1e-4)


def _search_with_a_broken_control_file(tmp_path, monkeypatch, capfd, shape, timer_of):
    """search_record on `shape` with one control file that does not build beside the list; the record,
    and what reached stdout and stderr while it ran."""
    broken = tmp_path / "broken.acf"
    broken.write_text("not a controls file\n")
    monkeypatch.setattr(submission, "ACF_GLOB", str(tmp_path / "*.acf"))
    x, weight, bias = make_inputs(*shape)
    capfd.readouterr()
    record = submission.search_record(("gpu", *shape), x, weight, bias, timer_of(x.device))
    printed = capfd.readouterr()
    return record, printed.out + printed.err, (x, weight, bias)


def _assert_the_broken_control_file_is_one_dropped_line(record, printed, unserved_by_cuda: int):
    """The control file alone fails to build and is dropped, never picked; every other candidate but the
    `unserved_by_cuda` CUDA tiles is timed inside the budget; nothing reached stdout or stderr."""
    heuristic = submission.heuristic_config(*record["key"][1:])
    candidates = submission.tune_candidates(*record["key"][1:])
    why = dict(record["dropped"])
    broken = [config for config in why if str(config[2]).startswith("--apply-controls")]
    assert [config[:2] for config in broken] == [heuristic], record["dropped"]  # the control file, on the heuristic
    assert why[broken[0]].startswith("build error ("), record["dropped"]
    unserved = [config for config, reason in why.items() if reason == "the CUDA kernel does not serve this input"]
    assert len(unserved) == unserved_by_cuda and len(why) == 1 + unserved_by_cuda, record["dropped"]
    assert record["pick"] != broken[0] and record["seconds"] < 10
    assert len(record["timed"]) == len(candidates) - len(why)
    line = submission.pick_line(record)
    assert f"{len(record['timed'])} of {len(candidates)} candidates timed" in line, line
    assert "broken.acf (build error (" in line and "control files: broken.acf" in line, line
    assert "reproducer" not in printed and printed.strip() == "", printed[:2000]  # nothing but the one line


def test_a_control_file_that_does_not_build_is_dropped_in_one_line_without_its_reproducer(
        tmp_path, monkeypatch, capfd):
    """Under the interpreter, which ignores ptx_options: the control file's build fails the way Triton's
    does on a GPU, its reproducer printed to stdout before the error."""
    real_launch = submission.launch

    def launch(x, weight, bias, out, block, warps, build=None):
        if build and build.startswith("--apply-controls"):
            print("=" * 64 + "\n" + "ptx source line\n" * 300 + "please share the reproducer above with Triton project.")
            raise RuntimeError("ptxas failed")
        real_launch(x, weight, bias, out, block, warps, build)

    monkeypatch.setattr(submission, "launch", launch)

    def fake_timer_of(device):
        return lambda runs, samples=6: [run() or 1.0 for run in runs]

    record, printed, _ = _search_with_a_broken_control_file(tmp_path, monkeypatch, capfd, (1, 3, 300, 4), fake_timer_of)
    _assert_the_broken_control_file_is_one_dropped_line(record, printed, 0 if DEVICE == "cuda" else len(submission.CUDA_CANDIDATES))  # CPU tensors: no CUDA kernel


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the leaderboard's timing); none is visible")
def test_on_the_gpu_the_search_times_the_list_in_budget_and_drops_a_control_file_that_does_not_build(
        tmp_path, monkeypatch, capfd):
    record, printed, (x, weight, bias) = _search_with_a_broken_control_file(
        tmp_path, monkeypatch, capfd, (1, 256, 4096, 4), submission.graph_timer)
    _assert_the_broken_control_file_is_one_dropped_line(record, printed, 0)  # aligned rows: every CUDA tile serves
    out = torch.empty_like(x)
    submission.launch(x, weight, bias, out, *record["pick"])
    torch.testing.assert_close(out.double().cpu(), conv_float64(x, weight, bias), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("segment_extra,expected", [
    ({"segment_pool_id": (1, 0)}, True),  # a graph's private pool: a capture is under way
    ({"segment_pool_id": (0, 0)}, False),  # the default pool
    ({}, None),  # a snapshot without pool ids cannot tell
])
def test_without_torchs_capture_query_the_pool_of_a_fresh_allocation_tells(monkeypatch, segment_extra, expected):
    monkeypatch.delattr(torch.cuda.CUDAGraph, "get_currently_capturing_graph", raising=False)
    marker = torch.empty(1)
    monkeypatch.setattr(submission.torch, "empty", lambda *a, **k: marker)
    segment = {"address": marker.data_ptr() - 64, "total_size": 1 << 20, **segment_extra}
    monkeypatch.setattr(torch.cuda.memory, "_snapshot", lambda: {"segments": [segment]})
    assert submission.capturing("cpu") is expected


def test_a_candidate_inside_the_margin_leaves_the_heuristic_in_place(monkeypatch):
    x, weight, bias = make_inputs(1, 2, 300, 4, seed=6)
    monkeypatch.setattr(submission, "CANDIDATES", [(128, 1)])
    monkeypatch.setattr(submission, "CUDA_CANDIDATES", [])
    heuristic = submission.heuristic_config(1, 2, 300, 4)
    just_faster = {heuristic[0]: 10.0, 128: 10.0 * (1 - submission.RETIME_MARGIN / 2)}
    calls = []

    def timer(runs, samples=6):
        calls.extend(runs)
        return list(just_faster.values())[:len(runs)]

    record = submission.search_record(("cpu", 1, 2, 300, 4), x, weight, bias, timer)
    assert record["pick"] == (*heuristic, None) and len(calls) == 4  # timed, then re-timed: both inside the band
    assert [us for _, us in record["retimed"]] == list(just_faster.values())
    assert "the fastest, 128/1, was 0.25% faster, inside the 0.5% margin" in submission.pick_line(record)


@pytest.mark.parametrize("times,pick", [
    ([10.0, 9.0, 8.97, 9.3], 1),  # 1 and 2 within the re-timing's margin of each other: the earlier one, in every process
    ([10.0, 9.0, 8.85, 9.3], 2),  # 2 beats 1 by more than the margin
    ([10.0, 10.2, 9.95, 9.0], 3),  # the last, by more than the margin over all before it
    ([9.95, 9.0, 10.0, 9.5], 1),  # the fastest, second in line
    ([9.0, 8.98, 8.97, 9.3], 0),  # the heuristic, timed first, within the re-timing's margin of the fastest
], ids=["near-tie", "clear-win", "last-wins", "fastest-second", "heuristic-stays"])
def test_the_search_picks_the_first_candidate_within_the_margin_of_the_fastest(monkeypatch, times, pick):
    x, weight, bias = make_inputs(1, 2, 300, 4, seed=6)
    monkeypatch.setattr(submission, "CANDIDATES", [(128, 1), (256, 1), (512, 2)])
    monkeypatch.setattr(submission, "CUDA_CANDIDATES", [])
    monkeypatch.setattr(submission, "ACF_GLOB", "/nonexistent/*.acf")
    us = dict(zip(submission.tune_candidates(1, 2, 300, 4), times))
    record = submission.search_record(("cpu", 1, 2, 300, 4), x, weight, bias, lambda runs, samples=6: [us[timed_config(run)] for run in runs])
    assert len(record["timed"]) == 4 and record["pick"] == record["timed"][pick][0]


def timed_config(run) -> tuple:
    """The config a search's run launches: the search times functools.partial(launch, x, weight, bias, out, *config)."""
    return tuple(run.args[4:])


def _search_timed(monkeypatch, first: list[float], second=None):
    """search_record on four Triton candidates, whose first timing is `first` (in the list's order) and
    whose re-timing gives `second` (config -> us) or the first times; the record and each timer call's
    (configs, samples)."""
    x, weight, bias = make_inputs(1, 2, 300, 4, seed=6)
    monkeypatch.setattr(submission, "CANDIDATES", [(128, 1), (256, 1), (512, 2)])
    monkeypatch.setattr(submission, "CUDA_CANDIDATES", [])
    monkeypatch.setattr(submission, "ACF_GLOB", "/nonexistent/*.acf")
    configs = submission.tune_candidates(1, 2, 300, 4)
    calls = []

    def timer(runs, samples=6):
        calls.append(([timed_config(run) for run in runs], samples))
        table = dict(zip(configs, first)) if len(calls) == 1 else {**dict(zip(configs, first)), **(second or {})}
        return [table[timed_config(run)] for run in runs]

    return submission.search_record(("cpu", 1, 2, 300, 4), x, weight, bias, timer), configs, calls


def test_the_finalists_are_timed_again_with_more_samples_and_that_timing_picks(monkeypatch):
    """First timing: 1 at 9.0 and 2 at 9.15 (1.7% behind, inside the 2% band) are the finalists, and 1 would
    win; the re-timing reads 2 2.2% ahead, beyond the margin, so 2 is the pick. The heuristic and 3, over
    the band, are not timed again."""
    record, configs, calls = _search_timed(monkeypatch, [10.0, 9.0, 9.15, 9.5], second=None)
    assert record["pick"] == configs[1] and [c for c, _ in record["retimed"]] == configs[1:3]
    assert calls[1] == (configs[1:3], submission.RETIME_SAMPLES) and submission.RETIME_SAMPLES > 6
    record, configs, calls = _search_timed(
        monkeypatch, [10.0, 9.0, 9.15, 9.5], second={configs[1]: 9.2, configs[2]: 9.0})
    assert record["pick"] == configs[2], record
    line = submission.pick_line(record)
    assert "2 within 2% of the fastest re-timed" in line and "BLOCK=256 num_warps=1" in line, line


def test_the_re_timing_decides_with_its_own_narrower_margin(monkeypatch):
    """Re-timed, 2 reads 0.7% ahead of 1: past RETIME_MARGIN (0.5%), inside TUNE_MARGIN (1%), so 2 is the
    pick where the first timing's margin would have kept 1; at 0.3% ahead, 1 stays and the line names the margin."""
    assert submission.RETIME_MARGIN < submission.TUNE_MARGIN
    _, configs, _ = _search_timed(monkeypatch, [10.0, 9.0, 9.1, 9.5])
    ahead = 1 - (submission.RETIME_MARGIN + submission.TUNE_MARGIN) / 2
    record, configs, _ = _search_timed(monkeypatch, [10.0, 9.0, 9.1, 9.5],
                                       second={configs[1]: 9.0, configs[2]: 9.0 * ahead})
    assert record["pick"] == configs[2], record
    record, configs, _ = _search_timed(monkeypatch, [10.0, 9.0, 9.1, 9.5],
                                       second={configs[1]: 9.0, configs[2]: 9.0 * (1 - submission.RETIME_MARGIN / 2)})
    assert record["pick"] == configs[1], record
    assert f"inside the {submission.RETIME_MARGIN * 100:g}% margin" in submission.pick_line(record)


def test_a_lone_fastest_is_not_timed_again(monkeypatch):
    record, configs, calls = _search_timed(monkeypatch, [10.0, 9.0, 9.3, 9.5])
    assert len(calls) == 1 and record["retimed"] == [] and record["pick"] == configs[1]
    assert "re-timed" not in submission.pick_line(record)


def test_at_most_max_finalists_of_the_fastest_are_timed_again_in_the_lists_order(monkeypatch):
    monkeypatch.setattr(submission, "MAX_FINALISTS", 3)
    record, configs, calls = _search_timed(monkeypatch, [9.05, 9.0, 9.1, 9.02])
    assert calls[1][0] == [configs[0], configs[1], configs[3]]  # the three fastest, in the list's order


def test_the_re_timing_takes_no_more_samples_than_the_first_timing_of_a_full_list():
    """The search's budget: its re-timing is at most as long as the first timing of MAX_CANDIDATES at six samples."""
    assert submission.MAX_FINALISTS * submission.RETIME_SAMPLES <= submission.MAX_CANDIDATES * 6
    assert submission.FINAL_BAND > submission.TUNE_MARGIN  # a config just past the margin is still timed again


def test_a_re_timing_that_fails_keeps_the_first_timing_and_says_so(monkeypatch):
    x, weight, bias = make_inputs(1, 2, 300, 4, seed=6)
    monkeypatch.setattr(submission, "CANDIDATES", [(128, 1)])
    monkeypatch.setattr(submission, "CUDA_CANDIDATES", [])
    monkeypatch.setattr(submission, "ACF_GLOB", "/nonexistent/*.acf")

    def timer(runs, samples=6):
        if samples != 6:
            raise RuntimeError("capture failed")
        return [9.1, 9.0][:len(runs)]  # both inside the band: a re-timing is tried

    record = submission.search_record(("cpu", 1, 2, 300, 4), x, weight, bias, timer)
    assert record["pick"] == (128, 1, None) and record["retimed"] == [] and record["retime_error"] == "RuntimeError"
    assert "re-timing failed (RuntimeError), the first timing kept" in submission.pick_line(record)


@pytest.mark.parametrize("runs,samples", [(12, 6), (4, 6), (3, 3), (1, 6)], ids=["12-runs", "4-runs", "3-runs", "1-run"])
def test_the_search_timer_starts_each_sample_one_run_later(runs, samples):
    """Each sample times every run once, and the run timed first moves on by one a sample, so no run is
    first in more samples than any other (the median then drops the one sample a run had first)."""
    orders = submission.sample_orders(runs, samples)
    assert len(orders) == samples and all(sorted(order) == list(range(runs)) for order in orders)
    firsts = [order[0] for order in orders]
    assert firsts == [sample % runs for sample in range(samples)]
    counts = [firsts.count(run) for run in range(runs)]
    assert max(counts) - min(counts) <= 1
