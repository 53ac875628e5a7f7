"""The ncu tile table: specs in launch order, one record a launch, read from ncu's raw CSV page."""
import pytest

from scripts import ncu_profile

HEADER = ['"ID"', '"Kernel Name"', '"gpu__time_duration.sum"', '"smsp__inst_executed.sum"',
          '"launch__registers_per_thread"', '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"']
UNITS = ['""', '""', '"usecond"', '"inst"', '"register/thread"', '"ratio"']


def raw_page(rows):
    lines = ["==PROF== Connected to process", ",".join(HEADER), ",".join(UNITS)]
    lines += [",".join(f'"{v}"' for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def test_specs_put_the_copy_first_at_each_tile_and_carry_a_build():
    specs = ncu_profile.tile_specs(["submission.py", "submission.py+cuda"], [(1024, 1), (4096, 4)])
    assert [s.split("/")[-1] for s in specs] == [
        "copy:1024:1", "submission.py@1024:1", "submission.py@1024:1:cuda",
        "copy:4096:4", "submission.py@4096:4", "submission.py@4096:4:cuda"]


def test_records_follow_the_launches_with_instructions_a_output_and_stalls():
    text = raw_page([[0, "copy", "20.0", "1,000", "42", "80.5"], [1, "conv", "21.0", "5,000", "78", "18.2"]])
    records = ncu_profile.tile_records(text, ["submission.py"], {"B": 1, "D": 2, "S": 16000}, [(1024, 1)])
    copy, kernel = records
    assert copy["spec"] == "copy:1024:1" and kernel["spec"] == "submission.py@1024:1" and kernel["tile"] == "1024/1"
    assert kernel["us"] == 21.0 and kernel["regs"] == 78 and kernel["inst/output"] == pytest.approx(5000 * 32 / 32000)
    assert copy["stall long_scoreboard"] == 80.5
    assert "stall long_sco" in ncu_profile.format_tiles(records)  # headers cut to 14 characters


@pytest.mark.parametrize("rows", [[], [[0, "copy", "20.0", "1", "42", "1"]]], ids=["no kernel", "one of two"])
def test_a_page_that_does_not_hold_every_launch_is_refused(rows):
    with pytest.raises((ValueError, RuntimeError), match="kernel"):
        ncu_profile.tile_records(raw_page(rows), ["submission.py"], {"B": 1, "D": 1, "S": 4}, [(1024, 1)])


def test_side_by_side_profiles_the_file_and_the_fastest_copy(tmp_path, monkeypatch):
    """The whole side-by-side path short of ncu itself: each target's page read back into the table."""
    import subprocess

    monkeypatch.setattr(ncu_profile, "fastest_copy", lambda args: (4096, 4))
    launched = []

    def fake_ncu(command, **kwargs):
        launched.append(command)
        log = command[command.index("--log-file") + 1]
        with open(log, "w") as f:
            f.write(raw_page([[0, "kernel", "20.0", "1,000", "42", "1"]]))
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(ncu_profile.subprocess, "run", fake_ncu)
    table = ncu_profile.profile_side_by_side("submission.py", {"B": 4, "D": 2560, "S": 4096, "W": 4, "seed": 1},
                                             tmp_path, echo=lambda line: None)
    specs = [c[c.index("scripts.ncu_profile") + 1] for c in launched]
    assert specs[0].endswith("submission.py") and specs[1] == "copy:4096:4"
    assert "submission" in table and "4096" in table.splitlines()[0]
    assert (tmp_path / "profile_4x2560x4096x4.txt").read_text().startswith(table.splitlines()[0])
