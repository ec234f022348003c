"""The kernel-level geometry arm: corruption with the C4 strides, none with the fix."""

import pytest

from wb_kernels.experiment import run_geometry_arm
from workbench.errors import KernelError

KEYS = {"corrupted_tokens", "mismatch_bytes", "tokens", "bytes", "impl", "device"}


@pytest.mark.parametrize("partial", [True, False])
def test_arms(partial):
    off = run_geometry_arm(geometry_fix=False, seed=3, tokens=700, partial_pages=partial)
    on = run_geometry_arm(geometry_fix=True, seed=3, tokens=700, partial_pages=partial)
    assert set(off) == KEYS and set(on) == KEYS
    assert off["tokens"] == on["tokens"] == 700
    assert off["bytes"] == 700 * 2 * 256
    assert off["corrupted_tokens"] > 0 and off["mismatch_bytes"] > 0
    assert on["corrupted_tokens"] == 0 and on["mismatch_bytes"] == 0
    assert off["impl"] == "reference" or off["device"] != "cpu"


def test_same_seed_same_result_and_seeds_differ():
    a = run_geometry_arm(geometry_fix=False, seed=11, tokens=300)
    b = run_geometry_arm(geometry_fix=False, seed=11, tokens=300)
    c = run_geometry_arm(geometry_fix=False, seed=12, tokens=300)
    assert a == b
    assert a["mismatch_bytes"] != c["mismatch_bytes"]


def test_one_token_is_enough_to_show_the_bug():
    r = run_geometry_arm(geometry_fix=False, seed=0, tokens=1)
    assert r["tokens"] == 1 and r["corrupted_tokens"] > 0


def test_bad_token_count():
    with pytest.raises(KernelError):
        run_geometry_arm(geometry_fix=True, seed=0, tokens=0)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("partial", [True, False])
def test_default_size_any_seed(seed, partial):
    off = run_geometry_arm(geometry_fix=False, seed=seed, partial_pages=partial)
    on = run_geometry_arm(geometry_fix=True, seed=seed, partial_pages=partial)
    assert off["tokens"] == on["tokens"] == 4096
    assert off["corrupted_tokens"] > 0 and on["mismatch_bytes"] == 0
