"""HiCache: the token-granular partial-page load through kernels.transfer, and the dead class."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.sim import datapath as dp
from workbench.sim import hicache as hc


def _cached(dtype: str, geometry_bug: bool, n: int = 300):
    """A device pool with stale rows, a HiCache holding one sequence of n tokens."""
    dev = hc.DeepSeekV4TokenToKVPool(16, dtype)
    cache = hc.build_hicache_stack(dev, host_pages=32, geometry_bug=geometry_bug)
    toks = dp.filler_tokens(11, n)
    pages = dev.alloc(-(-n // 64))
    dev.write_rows(pages, 0, dp.kv_rows(toks), dp.index_k_rows(toks, dtype))
    cache.insert(toks, pages, None, 0)
    # the device pages are reused by another sequence before the hit comes back
    other = dp.filler_tokens(99, n)
    dev.write_rows(pages, 0, dp.kv_rows(other), dp.index_k_rows(other, dtype))
    dev.free(pages)
    return dev, cache, toks


def _hit(dev, cache, toks):
    entry, n = cache.match(toks)
    assert entry is not None and n == len(toks)
    dst = dev.alloc(-(-len(toks) // 64))
    loaded = cache.load(entry, n, dst)
    kv, idx = dev.read_rows(dst, loaded)
    return loaded, kv, idx


def test_bf16_partial_page_through_the_c4_stride_corrupts_only_the_partial_page():
    dev, cache, toks = _cached("bf16", geometry_bug=True)
    loaded, kv, idx = _hit(dev, cache, toks)
    assert loaded == 300                           # 4 full pages + 44 tokens token-granular
    want = dp.index_k_rows(toks, "bf16")
    bad = np.nonzero((idx != want).any(axis=1))[0]
    assert len(bad) > 0 and bad.min() >= 256       # the full pages came through intact
    assert np.array_equal(kv, dp.kv_rows(toks))    # C4 KV uses its own geometry: intact
    assert cache.stats["buggy_partial_loads"] == 1


def test_bf16_partial_page_with_the_fixed_geometry_is_exact():
    dev, cache, toks = _cached("bf16", geometry_bug=False)
    loaded, kv, idx = _hit(dev, cache, toks)
    assert loaded == 300
    assert np.array_equal(idx, dp.index_k_rows(toks, "bf16"))
    assert np.array_equal(kv, dp.kv_rows(toks))
    assert cache.stats["partial_loads"] == 1 and cache.stats["buggy_partial_loads"] == 0


def test_fp8_index_k_is_page_aligned_only():
    dev, cache, toks = _cached("fp8", geometry_bug=True)
    loaded, kv, idx = _hit(dev, cache, toks)
    assert loaded == 256                           # the partial page is recomputed instead
    assert np.array_equal(idx, dp.index_k_rows(toks[:256], "fp8"))
    assert cache.stats["partial_loads"] == 0


def test_host_pool_is_sized_from_the_live_device_buffer():
    dev = hc.DeepSeekV4TokenToKVPool(4, "bf16")
    host = hc.DeepSeekV4PagedHostPool(dev, 8)
    assert host.idx.shape[2] == 64 * 256 and host.kv.shape[2] == 64 * 584


@pytest.mark.parametrize("fix, width", [(False, 132), (True, 256)])
def test_dsaindexerpoolhost_carries_the_sizing_fix(fix, width):
    pool = hc.DSAIndexerPoolHost(4, "bf16", sizing_fix=fix)
    assert pool.bytes_per_token == width


def test_stack_builder_never_constructs_dsaindexerpoolhost(monkeypatch):
    made = []
    orig = hc.DSAIndexerPoolHost.__init__
    monkeypatch.setattr(hc.DSAIndexerPoolHost, "__init__",
                        lambda self, *a, **k: (made.append(1), orig(self, *a, **k))[1])
    dev = hc.DeepSeekV4TokenToKVPool(4, "bf16")
    cache = hc.build_hicache_stack(dev, host_pages=8, geometry_bug=True)
    assert isinstance(cache.host, hc.DeepSeekV4PagedHostPool)
    assert made == []
    hc.DSAIndexerPoolHost(2, "bf16", sizing_fix=True)     # the counter does count
    assert made == [1]
