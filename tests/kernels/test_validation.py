"""Bad inputs raise KernelError (exit code 2) before any byte moves."""

import pytest

from wb_kernels import transfer
from wb_kernels.cases import make_pool
from workbench.errors import BadInput, KernelError

from kernel_kit import torch

G, LAY, PS = "index_k_fp8", "page_first", 64


@pytest.fixture
def pools():
    gen = torch.Generator().manual_seed(0)
    return make_pool(G, LAY, 8, 2, PS, gen=gen), make_pool(G, LAY, 6, 2, PS, gen=gen)


def _call(src, dst, si=None, di=None, **over):
    kw = dict(geometry=G, granularity="token", layout=LAY, page_size=PS)
    kw.update(over)
    transfer(src, dst, torch.tensor([1, 2, 3]) if si is None else si,
             torch.tensor([4, 5, 6]) if di is None else di, **kw)


# name -> (the call's changes, made when the test runs: torch is imported then; the message's fragment)
BAD = {
    "src id out of range": (lambda: dict(si=torch.tensor([1, 2, 8 * PS])), "outside [0, 512)"),
    "negative dst id": (lambda: dict(di=torch.tensor([4, -1, 6])), "token -1"),
    "int32 ids": (lambda: dict(si=torch.tensor([1, 2, 3], dtype=torch.int32)), "int64"),
    "float ids": (lambda: dict(di=torch.tensor([4.0, 5.0, 6.0])), "int64"),
    "2-D ids": (lambda: dict(si=torch.tensor([[1, 2, 3]]), di=torch.tensor([[4, 5, 6]])), "1-D"),
    "lengths differ": (lambda: dict(di=torch.tensor([4, 5])), "3 entries"),
    "duplicate destinations": (lambda: dict(di=torch.tensor([4, 5, 4])), "more than once"),
    "page out of range": (lambda: dict(granularity="page", si=torch.tensor([0]), di=torch.tensor([6])),
                          "page 6"),
    "rows of another geometry": (lambda: dict(geometry="index_k_bf16"), "16384"),
    "page size": (lambda: dict(page_size=32), "page_size=32"),
    "bad page size": (lambda: dict(page_size=0), "page_size"),
    "unknown geometry": (lambda: dict(geometry="fp4"), "unknown geometry"),
    "unknown stride geometry": (lambda: dict(stride_geometry="fp4"), "unknown geometry"),
    "unknown layout": (lambda: dict(layout="row_major"), "layout"),
    "unknown granularity": (lambda: dict(granularity="byte"), "granularity"),
    "unknown impl": (lambda: dict(impl="triton"), "impl"),
    "cuda impl on host pools": (lambda: dict(impl="cuda"), "CUDA"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_rejected_and_nothing_moves(pools, name):
    src, dst = pools
    make, fragment = BAD[name]
    over = make()
    before = dst.clone()
    with pytest.raises(KernelError) as err:
        _call(src, dst, **over)
    assert fragment in err.value.message
    assert isinstance(err.value, BadInput) and err.value.exit_code == 2
    assert torch.equal(dst, before)


@pytest.mark.parametrize("mutate,fragment", [
    (lambda t: t.float(), "dtype"),
    (lambda t: t[:, :1, :].contiguous(), "layers"),
    (lambda t: t.view(-1), "3-D"),
    (lambda t: t.transpose(0, 1), "contiguous"),
])
def test_bad_pools(pools, mutate, fragment):
    src, dst = pools
    before = dst.clone()
    with pytest.raises(KernelError) as err:
        _call(mutate(src), dst)
    assert fragment in err.value.message
    assert torch.equal(dst, before)


def test_one_pool_both_sides(pools):
    src, _ = pools
    before = src.clone()
    with pytest.raises(KernelError, match="both read and written"):
        _call(src, src, si=torch.tensor([1, 2]), di=torch.tensor([2, 3]))
    with pytest.raises(KernelError, match="separate buffers"):
        _call(src, src, stride_geometry="c4_latent")
    assert torch.equal(src, before)
    # Disjoint rows of one pool are fine.
    _call(src, src, si=torch.tensor([1, 2]), di=torch.tensor([70, 71]))
    assert torch.equal(src[1, :, 6 * 128:8 * 128], before[0, :, 1 * 128:3 * 128])


def test_empty_copy_is_a_no_op(pools):
    src, dst = pools
    before = dst.clone()
    e = torch.empty(0, dtype=torch.int64)
    _call(src, dst, si=e, di=e)
    assert torch.equal(dst, before)


def test_cached_pools_still_check_the_ids_of_every_call(pools):
    """The pools' checks are cached per pair of pools; the ids are checked on every call."""
    src, dst = pools
    _call(src, dst)
    before = dst.clone()
    for make, fragment in (BAD["src id out of range"], BAD["duplicate destinations"],
                           BAD["int32 ids"]):
        with pytest.raises(KernelError) as err:
            _call(src, dst, **make())
        assert fragment in err.value.message
    assert torch.equal(dst, before)


def test_a_new_pool_is_validated_even_where_an_old_one_was():
    """A pool that dies and is replaced by another (possibly at the same id()) is checked anew."""
    gen = torch.Generator().manual_seed(3)
    src = make_pool(G, LAY, 8, 2, PS, gen=gen)
    for _ in range(20):
        dst = make_pool(G, LAY, 6, 2, PS, gen=gen)
        _call(src, dst)
        del dst
        bad = torch.zeros(6, 2, 100, dtype=torch.uint8)   # rows of the wrong size
        with pytest.raises(KernelError, match="rows are 100 bytes"):
            _call(src, bad)
        del bad


def test_a_pool_resized_in_place_is_validated_anew(pools):
    src, dst = pools
    _call(src, dst)
    dst.resize_(6, 2, 100)
    with pytest.raises(KernelError, match="rows are 100 bytes"):
        _call(src, dst)


@pytest.mark.parametrize("s,d,ok", [
    ([0, 5, 9], [1, 2, 3], True),
    ([0, 5, 10], [1, 2, 3], False),          # src past its limit
    ([-1, 5, 9], [1, 2, 3], False),
    ([0, 5, 9], [1, 20, 3], False),          # dst past its limit
    ([0, 5, 9], [1, 2, 1], False),           # a destination twice (bincount: dense ids)
    ([], [], True),
    ([4], [7], True),
])
def test_reused_ids_are_checked_on_the_host_as_a_plan_checks_them(s, d, ok):
    """The host copy of reused device ids runs unchecked only when plan_transfer would accept
    those ids (range, duplicate destinations)."""
    from wb_kernels.reuse import host_valid

    assert host_valid(torch.tensor(s, dtype=torch.int64), torch.tensor(d, dtype=torch.int64),
                      10, 20) is ok


def test_duplicate_destinations_in_a_wide_id_range_are_found():
    """Few ids in a large pool: the sort finds a repeated destination as the bincount does."""
    from wb_kernels.reuse import host_valid

    d = torch.tensor([5, 1 << 30, 77, 1 << 30])
    assert host_valid(torch.arange(4), d, 10, 1 << 31) is False
    assert host_valid(torch.arange(4), d[:3], 10, 1 << 31) is True
