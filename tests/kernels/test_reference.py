"""The torch reference against a per-segment slicing oracle, and the buggy stride mode."""

import pytest

from wb_kernels import GEOMETRIES, transfer
from wb_kernels.cases import index_set, make_pool, poison
from wb_kernels.check import oracle_transfer

from kernel_kit import torch

LAYOUTS = ("page_first", "layer_first")


def _case(geometry, layout, gran, kind, *, seed=0, ps=64, sp=12, dp=10, layers=3):
    gen = torch.Generator().manual_seed(seed)
    src = make_pool(geometry, layout, sp, layers, ps, gen=gen)
    si, di = index_set(kind, granularity=gran, src_pages=sp, dst_pages=dp, page_size=ps, gen=gen)
    shape = list(src.shape)
    shape[0 if layout == "page_first" else 1] = dp
    return src, poison(tuple(shape), gen), si, di


@pytest.mark.parametrize("geometry", list(GEOMETRIES))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("gran,kind", [("token", "aligned"), ("token", "partial"),
                                       ("token", "scattered"), ("token", "one"),
                                       ("token", "empty"), ("page", "aligned"),
                                       ("page", "one"), ("page", "empty")])
def test_reference_matches_oracle(geometry, layout, gran, kind):
    src, dst0, si, di = _case(geometry, layout, gran, kind)
    kw = dict(geometry=geometry, granularity=gran, layout=layout, page_size=64)
    got, want = dst0.clone(), dst0.clone()
    transfer(src, got, si, di, impl="reference", **kw)
    oracle_transfer(src, want, si, di, **kw)
    assert torch.equal(got, want)
    if si.numel():
        assert not torch.equal(got, dst0)  # something was written


@pytest.mark.parametrize("ps", [1, 3, 16])
def test_odd_page_sizes(ps):
    for geometry in GEOMETRIES:
        src, dst0, si, di = _case(geometry, "layer_first", "token", "scattered", ps=ps, seed=ps)
        kw = dict(geometry=geometry, granularity="token", layout="layer_first", page_size=ps)
        got, want = dst0.clone(), dst0.clone()
        transfer(src, got, si, di, **kw)
        oracle_transfer(src, want, si, di, **kw)
        assert torch.equal(got, want)


def test_token_copy_moves_exactly_the_named_rows():
    # Hand-computed: bf16 token 70 (page 1, slot 6) -> token 3 (page 0, slot 3), both layers.
    src = torch.arange(2 * 2 * 64 * 256, dtype=torch.int64).remainder(251).to(torch.uint8)
    src = src.view(2, 2, 64 * 256)
    dst = torch.zeros(1, 2, 64 * 256, dtype=torch.uint8)
    transfer(src, dst, torch.tensor([70]), torch.tensor([3]), geometry="index_k_bf16",
             granularity="token", layout="page_first")
    for layer in range(2):
        assert torch.equal(dst[0, layer, 3 * 256:4 * 256], src[1, layer, 6 * 256:7 * 256])
    assert int(dst.count_nonzero()) == int(dst[0, :, 768:1024].count_nonzero())


def test_fp8_scales_follow_the_values_block():
    src = torch.zeros(1, 1, 8448, dtype=torch.uint8)
    src[0, 0, 5 * 128:6 * 128] = 7          # token 5 values
    src[0, 0, 8192 + 5 * 4:8192 + 6 * 4] = 9  # token 5 scale
    dst = torch.zeros_like(src)
    transfer(src, dst, torch.tensor([5]), torch.tensor([0]), geometry="index_k_fp8",
             granularity="token", layout="page_first")
    assert torch.all(dst[0, 0, :128] == 7) and torch.all(dst[0, 0, 8192:8196] == 9)
    assert int(dst.count_nonzero()) == 132


PAIRS = [("index_k_bf16", "c4_latent"), ("c4_latent", "index_k_bf16"),
         ("index_k_fp8", "c4_latent"), ("index_k_bf16", "index_k_fp8"),
         ("index_k_fp8", "index_k_bf16")]


@pytest.mark.parametrize("geometry,addr", PAIRS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("gran", ["token", "page"])
def test_buggy_mode_matches_oracle(geometry, addr, layout, gran):
    kind = "partial" if gran == "token" else "aligned"
    src, dst0, si, di = _case(geometry, layout, gran, kind, seed=3)
    kw = dict(geometry=geometry, granularity=gran, layout=layout, page_size=64,
              stride_geometry=addr)
    got, want = dst0.clone(), dst0.clone()
    transfer(src, got, si, di, **kw)
    oracle_transfer(src, want, si, di, **kw)
    assert torch.equal(got, want)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", ["partial", "scattered", "one", "aligned", "large"])
@pytest.mark.parametrize("seed", [0, 1])
def test_bf16_rows_with_c4_strides_mismatch_and_right_geometry_does_not(layout, kind, seed):
    src, dst0, si, di = _case("index_k_bf16", layout, "token", kind, seed=seed)
    kw = dict(geometry="index_k_bf16", granularity="token", layout=layout, page_size=64)
    right, buggy, same = dst0.clone(), dst0.clone(), dst0.clone()
    transfer(src, right, si, di, **kw)
    transfer(src, buggy, si, di, stride_geometry="c4_latent", **kw)
    transfer(src, same, si, di, stride_geometry="index_k_bf16", **kw)
    want = dst0.clone()
    oracle_transfer(src, want, si, di, **kw)
    assert int((right != want).sum()) == 0
    assert int((same != want).sum()) == 0
    assert int((buggy != want).sum()) > 0


def test_buggy_mode_is_deterministic_and_stays_inside_dst():
    gen = torch.Generator().manual_seed(5)
    src = make_pool("index_k_bf16", "page_first", 6, 2, 64, gen=gen)
    # dst lives inside a larger buffer: the guard bytes around it must not change.
    guard = 4096
    row = 64 * 256
    big = poison((guard + 5 * 2 * row + guard,), gen)
    before = big.clone()
    dst = big[guard:guard + 5 * 2 * row].view(5, 2, row)
    src_before = src.clone()
    si = torch.arange(6 * 64 - 100, 6 * 64)     # the last tokens: c4 strides run past the end
    di = torch.randperm(5 * 64, generator=gen)[:100]
    kw = dict(geometry="index_k_bf16", granularity="token", layout="page_first",
              stride_geometry="c4_latent")
    transfer(src, dst, si, di, **kw)
    first = dst.clone()
    assert torch.equal(big[:guard], before[:guard]) and torch.equal(big[-guard:], before[-guard:])
    assert torch.equal(src, src_before)
    dst.copy_(before[guard:guard + 5 * 2 * row].view(5, 2, row))
    transfer(src, dst, si, di, **kw)
    assert torch.equal(dst, first)


def test_reference_has_no_per_token_python_loop():
    """The Python calls made by one transfer do not grow with the number of tokens."""
    import sys

    gen = torch.Generator().manual_seed(9)
    src = make_pool("c4_latent", "page_first", 40, 2, 64, gen=gen)
    dst = make_pool("c4_latent", "page_first", 40, 2, 64, gen=gen)

    def calls(n, stride=None):
        si = torch.randperm(40 * 64, generator=gen)[:n]
        di = torch.randperm(40 * 64, generator=gen)[:n]
        count = 0

        def prof(frame, event, arg):
            nonlocal count
            if event in ("call", "c_call"):
                count += 1

        transfer(src, dst, si, di, geometry="c4_latent", granularity="token",
                 layout="page_first", stride_geometry=stride)   # warm caches first
        sys.setprofile(prof)
        try:
            transfer(src, dst, si, di, geometry="c4_latent", granularity="token",
                     layout="page_first", stride_geometry=stride)
        finally:
            sys.setprofile(None)
        return count

    assert calls(10) == calls(2000)
    assert calls(10, "index_k_bf16") == calls(2000, "index_k_bf16")
