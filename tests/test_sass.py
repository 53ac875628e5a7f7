"""sass: the CUDA kernel built offline and read as SASS. The reading is tested on a recorded listing
(cuobjdump of submission.py's causal_conv1d_shuffle<2, 1, false>, sm_90, built by NVRTC 13.0.88); the
build itself only where NVRTC is installed (requirements-sass.txt, or a CUDA build of torch)."""
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ROOT
from scripts import sass

SAMPLE = Path(__file__).parent / "samples" / "sass_causal_conv1d_shuffle_2_1_false_sm90.txt"
needs_nvrtc = pytest.mark.skipif(sass.unavailable() is not None,
                                 reason=f"needs NVRTC and cuobjdump: {sass.unavailable()}")


def instruction(opcode, sets=None, waits=()):
    return sass.Instruction(0, opcode, opcode, sets, tuple(waits))


def test_the_recorded_listing_reads_as_its_instructions_with_their_addresses():
    listing = SAMPLE.read_text()
    found = sass.parse(listing)
    assert len(found) == len(re.findall(r"/\*[0-9a-f]{4}\*/", listing)) == 112
    assert [i.address for i in found] == sorted(i.address for i in found)
    assert {"LDG", "FFMA", "SHFL", "STG", "EXIT"} <= {i.opcode for i in found}


def test_the_control_words_say_what_only_variable_latency_instructions_can_set():
    """Loads and shuffles finish after a variable time, so each sets a scoreboard; fixed-latency
    arithmetic never does. Read at the wrong bits, the fields would not split this way."""
    found = sass.parse(SAMPLE.read_text())
    for i in found:
        if i.opcode in ("LDG", "SHFL"):
            assert i.sets is not None, i.text
        if i.opcode in ("FFMA", "IADD3", "IMAD", "FSEL", "ISETP", "LOP3"):
            assert i.sets is None, i.text
    first_fma = next(i for i in found if i.opcode == "FFMA")
    assert first_fma.waits, "the first FFMA of a kernel that loads its operands waits on a scoreboard"
    assert all(at < len(found) for at in sass.landings(found)), "every load's value is waited for before use"


def test_the_recorded_kernel_runs_all_its_math_after_its_loads_land():
    record = sass.schedule(sass.parse(SAMPLE.read_text()))
    assert record["global_loads"] == 5  # x's group, the halo's group, bias, two weights
    assert record["loads_landed_by_first_fma"] == 5
    assert record["fmas"] == 8 and record["fmas_after_last_load_lands"] == 8


def test_a_load_lands_where_an_instruction_first_waits_on_its_scoreboard():
    chunked = [instruction("LDG", sets=1), instruction("LDG", sets=2), instruction("FFMA", waits=[1]),
               instruction("FFMA"), instruction("FFMA", waits=[2]), instruction("FFMA"), instruction("EXIT")]
    assert sass.landings(chunked) == [2, 4]
    record = sass.schedule(chunked)
    assert record["loads_landed_by_first_fma"] == 1
    assert record["fmas_after_last_load_lands"] == 2
    assert record["loads_by_scoreboard"] == {"1": 1, "2": 1}


def test_ptxas_figures_and_the_kernels_a_source_defines():
    log = "ptxas info    : Used 95 registers, used 0 barriers, 0 bytes spill stores, 0 bytes spill loads"
    assert sass.resources(log) == {"registers": 95, "spill_store_bytes": 0, "spill_load_bytes": 0}
    assert sass.resources("nothing")["registers"] is None
    import submission
    assert sass.kernel_entries(submission.CUDA_SOURCE) == ["causal_conv1d_shuffle<int W, int V, bool EF>"]
    assert sass.kernel_entries("__global__ void plain(float* x) {}") == ["plain"]


def test_sass_says_in_one_sentence_what_it_lacks(monkeypatch):
    from scripts import cli

    result = CliRunner().invoke(cli.cli, ["sass"])
    assert result.exit_code != 0 and "--entry" in result.output and "causal_conv1d_shuffle<int W" in result.output
    result = CliRunner().invoke(cli.cli, ["sass", str(ROOT / "submissions" / "submission_helion.py"), "--entry", "k"])
    assert result.exit_code != 0 and "defines no CUDA_SOURCE" in result.output
    monkeypatch.setattr(sass, "nvrtc_library", lambda: None)
    result = CliRunner().invoke(cli.cli, ["sass", "--entry", "causal_conv1d_shuffle<4, 16, true>"])
    assert result.exit_code != 0 and "requirements-sass.txt" in result.output
    assert "Traceback" not in result.output


@needs_nvrtc
def test_sass_builds_the_submissions_kernel_and_writes_its_record(tmp_path):
    from scripts import cli

    result = CliRunner().invoke(cli.cli, ["sass", "--entry", "causal_conv1d_shuffle<4, 16, true>", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "sass.json").read_text())
    assert record["registers"] > 32 and record["global_loads"] >= 16 + 1 + 4  # x's groups, the halo, bias and weights
    assert record["fmas"] == 16 * 4 * 4  # 16 groups of 4 outputs, 4 taps each
    assert "LDG" in (tmp_path / "sass.txt").read_text()
    bad = CliRunner().invoke(cli.cli, ["sass", "--entry", "causal_conv1d_shuffle<4, 16, maybe>", "--out", str(tmp_path)])
    assert bad.exit_code != 0 and "could not build" in bad.output and "Traceback" not in bad.output
