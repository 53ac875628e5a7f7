"""sass: the CUDA kernel built offline and read as SASS. The reading is tested on a recorded listing
(cuobjdump of submission.py's causal_conv1d_shuffle<2, 1, false> before its row grid, sm_90, built by NVRTC 13.0.88) and on
made-up instructions; the build itself only where NVRTC is installed (requirements-sass.txt, or a CUDA
build of torch)."""
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import candidate
from scripts import cli, sass

SAMPLE = Path(__file__).parent / "samples" / "sass_causal_conv1d_shuffle_2_1_false_sm90.txt"
needs_nvrtc = pytest.mark.skipif(sass.unavailable() is not None,
                                 reason=f"needs NVRTC and cuobjdump: {sass.unavailable()}")
TWO_KERNELS = r"""
__global__ void scaled(const float* x, const float* w, float* out) {
  int i = threadIdx.x; out[i] = fmaf(w[0], x[i], w[1]);
}
__global__ void copied(const float* x, float* out) { int i = threadIdx.x; out[i] = x[i]; }
"""


def instruction(opcode, sets=None, waits=(), address=0, text=None):
    return sass.Instruction(address, opcode, text or opcode, sets, tuple(waits))


def refused(result) -> bool:
    """One sentence and a non-zero exit: click's own exit, not an exception that got out."""
    return result.exit_code != 0 and isinstance(result.exception, SystemExit) and "Traceback" not in result.output


def test_the_recorded_listing_reads_as_its_instructions_with_their_addresses():
    listing = SAMPLE.read_text()
    found = sass.parse(listing)
    assert len(found) == len(re.findall(r"/\*[0-9a-f]{4}\*/", listing)) == 112
    assert [i.address for i in found] == sorted(i.address for i in found)
    assert {"LDG", "FFMA", "SHFL", "STG", "EXIT"} <= {i.opcode for i in found}


def test_the_control_words_say_what_only_variable_latency_instructions_can_set():
    """Loads and shuffles finish after a variable time, so each sets a scoreboard; fixed-latency
    arithmetic never does, and every load is waited for before its value is used. Read at the wrong
    bits, the fields would not split this way."""
    found = sass.parse(SAMPLE.read_text())
    for i in found:
        if i.opcode in ("LDG", "SHFL"):
            assert i.sets is not None, i.text
        if i.opcode in ("FFMA", "IADD3", "IMAD", "FSEL", "ISETP", "LOP3"):
            assert i.sets is None, i.text
    assert all(at < len(found) for at in sass.first_waits(found))
    assert next(i for i in found if i.opcode == "FFMA").waits


def test_the_recorded_kernel_runs_all_its_math_after_its_last_load_is_waited_for():
    record = sass.schedule(sass.parse(SAMPLE.read_text()))
    assert record["global_loads"] == 5  # x's group, the halo's group, bias, two weights
    assert record["fmas"] == 8 and record["fmas_after_last_load_waited"] == 8
    assert record["caveats"] == []


def test_a_load_is_waited_for_at_the_first_later_wait_on_its_scoreboard_not_at_its_own():
    """A load may itself wait on the scoreboard it sets (for the one before it to be written)."""
    chunked = [instruction("LDG", sets=1), instruction("LDG", sets=1, waits=[1]), instruction("FFMA", waits=[1]),
               instruction("LDG", sets=2), instruction("FFMA"), instruction("FFMA", waits=[2]), instruction("FFMA")]
    assert sass.first_waits(chunked) == [1, 2, 5]
    record = sass.schedule(chunked)
    assert record["fmas_after_last_load_waited"] == 2 and record["fmas"] == 4
    assert record["loads_by_scoreboard"] == {"1": 2, "2": 1}


def test_what_the_reading_does_not_follow_is_said_and_no_load_is_not_a_tail():
    looped = [instruction("LDG", sets=1, address=0x10), instruction("FFMA", waits=[1], address=0x20),
              instruction("BRA", address=0x30, text="@P0 BRA 0x10"), instruction("DEPBAR", address=0x40)]
    said = sass.schedule(looped)["caveats"]
    assert any("backward branch at 0x0030" in why for why in said) and any("DEPBAR" in why for why in said)
    assert sass.schedule([instruction("FFMA"), instruction("EXIT")])["fmas_after_last_load_waited"] is None
    assert sass.caveats([instruction("BRA", address=0x30, text="BRA 0x50")]) == []


def test_an_async_copy_is_waited_for_where_a_count_wait_leaves_its_commit_group_done():
    """cp.async groups complete in order: DEPBAR.LE SB0, N waits for all but the newest N committed."""
    two_groups = [instruction("LDGSTS"), instruction("LDGDEPBAR", sets=0), instruction("LDGSTS"),
                  instruction("LDGDEPBAR", sets=0), instruction("DEPBAR", text="DEPBAR.LE SB0, 0x1"),
                  instruction("FFMA"), instruction("DEPBAR", text="DEPBAR.LE SB0, 0x0"), instruction("FFMA")]
    assert sass.first_waits(two_groups) == [4, 6]
    record = sass.schedule(two_groups)
    assert (record["async_copies"], record["commit_groups"], record["fmas_after_last_load_waited"]) == (2, 2, 1)
    assert record["caveats"] == []


def test_a_copys_groups_are_counted_on_the_scoreboard_of_the_commit_that_closes_it():
    """Commits on another scoreboard neither close nor count toward its group; a wait there is not its wait."""
    boards = [instruction("LDGSTS"), instruction("LDGDEPBAR", sets=2), instruction("LDGDEPBAR", sets=0),
              instruction("DEPBAR", text="DEPBAR.LE SB0, 0x0"), instruction("FFMA"),
              instruction("DEPBAR", text="DEPBAR.LE SB2, 0x1"), instruction("FFMA"),
              instruction("DEPBAR", text="DEPBAR.LE SB2, 0"), instruction("FFMA")]
    assert sass.first_waits(boards) == [7]
    assert sass.schedule(boards)["fmas_after_last_load_waited"] == 1


@pytest.mark.parametrize("listing, why, after", [
    ([instruction("LDGSTS"), instruction("DEPBAR", text="DEPBAR.LE SB0, 0x0"), instruction("FFMA")],
     "1 async copies that no DEPBAR.LE waits for", None),
    ([instruction("LDGSTS"), instruction("LDGDEPBAR", sets=0), instruction("DEPBAR", address=0x20,
      text="DEPBAR.LE SB0, 0x0, {4,3}"), instruction("FFMA")], "a DEPBAR this reading does not follow at 0x0020", None),
    ([instruction("UBLKCP"), instruction("FFMA")], "bulk or tensor copies (UBLKCP) are not counted", None),
    ([instruction("LDGSTS"), instruction("LDGDEPBAR", sets=0, text="@P0 LDGDEPBAR"),
      instruction("DEPBAR", text="DEPBAR.LE SB0, 0x0"), instruction("FFMA")], "a commit under a predicate", 1),
], ids=["never-committed", "list-form-wait", "bulk-copy", "predicated-commit"])
def test_what_the_reading_cannot_place_is_said_and_left_out_of_the_count(listing, why, after):
    """Copies no count wait covers, and bulk copies, are no tail it can place (None: no FFMA counted behind
    them); a predicated commit is read as if it runs, and said."""
    record = sass.schedule(listing)
    assert any(why in said for said in record["caveats"]), record["caveats"]
    assert record["fmas_after_last_load_waited"] == after


def test_a_record_with_copies_says_how_many_and_in_how_many_groups():
    record = {"entry": "k", "arch": "sm_90", "nvrtc": "13.0", "registers": 32, "spill_store_bytes": 0,
              "spill_load_bytes": 0, "instructions": 9, "mix": {"FFMA": 2}, "global_loads": 0,
              "loads_by_scoreboard": {}, "async_copies": 17, "commit_groups": 1, "fmas": 2,
              "fmas_after_last_load_waited": 1, "caveats": []}
    text = sass.format_record(record)
    assert "async copies (cp.async) 17, in 1 commit group\n" in text
    assert "after the last load or copy is first waited for: 1 of 2" in text
    assert "async copies" not in sass.format_record({**record, "async_copies": 0, "commit_groups": 0})


PIPELINED = r"""
__global__ void pipelined(const float4* x, float* out) {
  __shared__ float4 staged[64];
  for (int k = 0; k < 2; ++k) {
    unsigned dst = (unsigned)__cvta_generic_to_shared(&staged[32 * k + threadIdx.x]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(x + 32 * k + threadIdx.x));
    asm volatile("cp.async.commit_group;\n" ::);
  }
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
  float4 a = staged[threadIdx.x];
  out[threadIdx.x] = fmaf(a.x, a.y, a.z);
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  float4 b = staged[32 + threadIdx.x];
  out[32 + threadIdx.x] = fmaf(b.x, b.y, b.z);
}
"""


@needs_nvrtc
def test_a_built_two_stage_copy_has_only_its_second_stages_math_after_its_last_copy_lands(tmp_path):
    record, _ = sass.sass_record(PIPELINED, "pipelined", "sm_90", tmp_path)
    assert (record["async_copies"], record["commit_groups"]) == (2, 2)
    assert record["fmas"] == 2 and record["fmas_after_last_load_waited"] == 1 and record["caveats"] == []


def test_ptxas_figures_are_the_named_kernels_and_the_entries_read_as_they_are_typed():
    log = ("ptxas info    : Compiling entry function '_Z6copiedPKfPf' for 'sm_90'\n"
           "ptxas info    : Used 8 registers, used 0 barriers, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Compiling entry function '_Z6scaledPKfS0_Pf' for 'sm_90'\n"
           "ptxas info    : Used 95 registers, used 0 barriers, 4 bytes spill stores, 8 bytes spill loads\n")
    assert sass.resources(sass.entry_report(log, "_Z6scaledPKfS0_Pf")) == {
        "registers": 95, "spill_store_bytes": 4, "spill_load_bytes": 8}
    assert sass.resources(sass.entry_report(log, "_Z6copiedPKfPf"))["registers"] == 8
    assert sass.resources(sass.entry_report(log, "_Z5otherv"))["registers"] is None
    import submission
    assert sass.kernel_entries(submission.CUDA_SOURCE) == ["causal_conv1d_shuffle<W, V, EF, ROWS>"]
    assert sass.kernel_entries("__global__ void __launch_bounds__(128) bounded(float* x) {}") == ["bounded"]
    with pytest.raises(sass.SassError, match="not a GPU architecture"):
        sass.sass_record("", "k", "compute_90", Path("."))


def test_sass_says_in_one_sentence_what_it_lacks(monkeypatch, tmp_path):
    result = CliRunner().invoke(cli.cli, ["sass"])
    assert refused(result) and "--entry" in result.output and "causal_conv1d_shuffle<W, V, EF, ROWS>" in result.output
    plain = candidate(tmp_path, "def custom_kernel(data):\n    return data[0]\n")
    result = CliRunner().invoke(cli.cli, ["sass", str(plain), "--entry", "k"])
    assert refused(result) and "defines no CUDA_SOURCE" in result.output
    broken = candidate(tmp_path, "def custom_kernel(data:\n", name="broken.py")
    result = CliRunner().invoke(cli.cli, ["sass", str(broken), "--entry", "k"])
    assert refused(result) and "did not load: SyntaxError" in result.output
    monkeypatch.setattr(sass, "wheel_nvrtc", lambda: None)
    monkeypatch.setattr(sass, "NVRTC_BY_NAME", ("libnvrtc.so.0-none",))
    result = CliRunner().invoke(cli.cli, ["sass", "--entry", "causal_conv1d_shuffle<4, 16, true, false>"])
    assert refused(result) and "requirements-sass.txt" in result.output


@needs_nvrtc
def test_sass_builds_the_submissions_kernel_and_finds_its_tail(tmp_path):
    result = CliRunner().invoke(cli.cli, ["sass", "--entry", "causal_conv1d_shuffle<4, 16, true, false>", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "sass.json").read_text())
    assert record["registers"] > 32 and record["global_loads"] >= 16 + 1 + 4  # x's groups, the halo, bias and weights
    assert record["fmas"] == 16 * 4 * 4  # 16 groups of 4 outputs, 4 taps each
    assert record["fmas_after_last_load_waited"] == record["fmas"]  # NOTES v33: every load ahead of the math
    assert "LDG" in (tmp_path / "sass.txt").read_text()
    bad = CliRunner().invoke(cli.cli, ["sass", "--entry", "causal_conv1d_shuffle<4, 16, maybe, false>", "--out", str(tmp_path)])
    assert refused(bad) and "could not build" in bad.output
    out_is_a_file = tmp_path / "taken"
    out_is_a_file.write_text("")
    result = CliRunner().invoke(cli.cli, ["sass", "--entry", "causal_conv1d_shuffle<4, 16, true, false>", "--out", str(out_is_a_file)])
    assert refused(result) and "--out" in result.output


@needs_nvrtc
def test_sass_reads_only_the_named_kernel_of_a_source_with_two(tmp_path):
    path = candidate(tmp_path, f"CUDA_SOURCE = r'''{TWO_KERNELS}'''\n\ndef custom_kernel(data):\n    return data[0]\n")
    records = {}
    for entry in ("scaled", "copied"):
        result = CliRunner().invoke(cli.cli, ["sass", str(path), "--entry", entry, "--out", str(tmp_path / entry)])
        assert result.exit_code == 0, result.output
        records[entry] = json.loads((tmp_path / entry / "sass.json").read_text())
    assert records["scaled"]["fmas"] == 1 and records["copied"]["fmas"] == 0
    assert records["scaled"]["global_loads"] == 3 and records["copied"]["global_loads"] == 1
    assert records["scaled"]["mangled"] != records["copied"]["mangled"]
