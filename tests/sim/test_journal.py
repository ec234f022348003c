"""`wb sim journal` over log text it did not write itself (lines are untrusted input)."""

from __future__ import annotations


def test_a_line_starting_with_a_time_without_zone_is_read_as_utc(sim_dir, cli):
    """A log line whose first word is a time without a zone (a message's continuation line, or a line another
    tool appended) ended `wb sim journal --since ...` in "can't compare offset-naive and offset-aware datetimes":
    a traceback, and in the sim profile's WaitingForInput count (journal | grep -ic) a count of the lines before
    it only. Such a time is UTC, as --since reads one."""
    logs = sim_dir / "logs"
    logs.mkdir()
    (logs / "decode.log").write_text(
        "2000-01-01T00:00:00.000000Z decode[1] INFO old WaitingForInput\n"
        "2000-01-01 00:00:01 continued\n"
        "20990101 decode[1] INFO new WaitingForInput\n"
        "2099-01-01T00:00:02 decode[1] INFO newer WaitingForInput\n")
    code, out, err = cli("sim", "journal", "--dir", str(sim_dir), "--unit", "decode", "--since", "2050-01-01")
    assert code == 0 and "Traceback" not in err, err
    assert out.splitlines() == ["20990101 decode[1] INFO new WaitingForInput",
                                "2099-01-01T00:00:02 decode[1] INFO newer WaitingForInput"]
