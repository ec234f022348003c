"""`wb kernel check|bench` through the real CLI."""

import json


def test_check_passes_and_reports(cli):
    code, out, _ = cli("kernel", "check", "--quick", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["ok"] is True
    assert data["groups"]["transfer"]["cases"] > 100
    assert data["groups"]["transfer"]["ok"] == data["groups"]["transfer"]["cases"]
    hits, total = data["bug_reproduced"]
    assert total > 0 and hits == total


def test_check_summary_text(cli):
    code, out, _ = cli("kernel", "check", "--quick", "--impl", "reference")
    assert code == 0
    assert "transfer cases byte-exact" in out and out.strip().endswith("PASS")


def test_bench_without_gpu_is_a_clear_error(cli):
    import torch

    if torch.cuda.is_available():
        return
    code, _, err = cli("kernel", "bench", "--quick")
    assert code == 2
    assert "needs a CUDA device" in err and "Hint:" in err


def test_bad_variants(cli):
    code, _, err = cli("kernel", "bench", "--variants", "x")
    assert code == 2 and "--variants" in err
