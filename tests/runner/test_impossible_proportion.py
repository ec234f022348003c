"""A proportion whose numerator a run records above its denominator, on the toy local deployment.

The evidence importer refuses such a row (a rate above 1); a run that collected one was stored as ok, and every
later analysis of the experiment ended in a traceback ("ValueError: math domain error" in the Wilson interval)."""

from __future__ import annotations

from runner_kit import edit_profile, run_hypothesis, store_rows  # noqa: E402  (tests/runner is on sys.path)


def test_a_run_whose_proportion_numerator_exceeds_its_denominator_is_invalid_naming_both(toy):
    # abort_share = waiting_for_input / sessions; the command prints 90 where the toy ran 10 sessions.
    edit_profile(toy.root, "  wall_s: {kind: continuous}\n",
                 "  wall_s: {kind: continuous}\n"
                 "  abort_share: {kind: proportion, numerator: waiting_for_input, denominator: sessions}\n")
    edit_profile(toy.root, "cat {{ state }}/aborts.txt", "echo 90")
    summary = run_hypothesis("toy-fix", db=toy.db, seed=7, replicates=1)
    assert [r["status"] for r in summary["runs"]] == ["invalid", "invalid"], summary["runs"]
    for run in summary["runs"]:
        assert ("metric 'waiting_for_input' (90) is larger than metric 'sessions' (10), its denominator in "
                "proportion 'abort_share'") in run["error"], run["error"]
    assert store_rows(toy.db, "SELECT status, count(*) FROM runs GROUP BY status") == [("invalid", 2)]
    assert toy.conf.read_bytes() == toy.original
