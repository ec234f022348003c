"""HiCache of the prefill: device KV pool, host pool, prefix index, and the stack builder.

The live host pool is `DeepSeekV4PagedHostPool`, sized from the live device buffers (so it is
bf16-correct by construction). `DSAIndexerPoolHost` carries the bf16 sizing fix
(`indexer_host_pool_fix`) but `build_hicache_stack` never constructs it: dead code, as in the
seed.

Where the seed world's corruption comes from (causal_model=seed): a prefix hit that is not
page-aligned loads its last, partial page at token granularity through `kernels.transfer`.
fp8 index-K is page-aligned-only (the partial page is recomputed). The bf16 patch routes
index-K through the token-granular copy, and with `geometry_fix=off` that copy is told to use
the hard-coded C4 latent strides (`stride_geometry="c4_latent"`): the partial page's real
index-K rows are never written (they keep whatever the device page held before) and bytes land
at C4 offsets instead. A lost cue row changes the decode's top-k: token salad.
In the wedge world (causal_model=wedge) the copy uses the correct geometry.

The pools are numpy arrays; the transfers see them as torch tensors sharing their memory. torch is imported
at the first transfer (`_torch`), not at start: its import is ~2 s of CPU, which a prefill that never serves a
request (a deployment brought up to be checked, restarted or stopped) need not pay, and `wb --help` must not.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from dataclasses import dataclass, field

import numpy as np

from workbench.sim import datapath as dp

__all__ = ["PAGE", "NUM_LAYERS", "DeepSeekV4TokenToKVPool", "DeepSeekV4PagedHostPool",
           "DSAIndexerPoolHost", "HiCache", "build_hicache_stack", "IDX_GEOMETRY"]

PAGE = 64
NUM_LAYERS = 1
IDX_GEOMETRY = {"bf16": "index_k_bf16", "fp8": "index_k_fp8"}
_C4_VALUES, _C4_SCALES = 576, 8
_IDX_SPLIT = {"bf16": (256, 0), "fp8": (128, 4)}


_TORCH = None


def _torch():
    """torch, imported on first use, with one intra-op thread: small index copies only contend with more
    (70x slower on 2 cores)."""
    global _TORCH
    if _TORCH is None:
        import torch

        torch.set_num_threads(1)
        _TORCH = torch
    return _TORCH


def _transfer(*args, **kwargs) -> None:
    _torch()
    from wb_kernels import transfer

    transfer(*args, **kwargs)


def _ids(values):
    torch = _torch()
    return torch.tensor(values, dtype=torch.int64)


class _PagePool:
    """kv and index-K rows in the page_first layout [pages, layers, page_bytes] + a free list. `kv_rows` and
    `idx_rows` are the numpy arrays; `kv` and `idx` the torch tensors over the same memory (the transfers')."""

    def __init__(self, num_pages: int, index_k_dtype: str, idx_token_bytes: int, *,
                 zeroed: bool) -> None:
        make = np.zeros if zeroed else np.empty
        self.num_pages = num_pages
        self.index_k_dtype = index_k_dtype
        self.kv_rows = make((num_pages, NUM_LAYERS, PAGE * dp.KV_BYTES), dtype=np.uint8)
        self.idx_rows = make((num_pages, NUM_LAYERS, PAGE * idx_token_bytes), dtype=np.uint8)
        self._tensors: tuple | None = None
        self._free = list(range(num_pages - 1, -1, -1))
        self._lock = threading.Lock()

    @property
    def kv(self):
        return self._as_tensors()[0]

    @property
    def idx(self):
        return self._as_tensors()[1]

    def _as_tensors(self) -> tuple:
        if self._tensors is None:
            torch = _torch()
            self._tensors = (torch.from_numpy(self.kv_rows), torch.from_numpy(self.idx_rows))
        return self._tensors

    @property
    def free_pages(self) -> int:
        return len(self._free)

    def alloc(self, n: int) -> list[int] | None:
        with self._lock:
            if n > len(self._free):
                return None
            return [self._free.pop() for _ in range(n)]

    def free(self, pages: list[int]) -> None:
        with self._lock:
            self._free.extend(reversed(pages))


def _views(a: np.ndarray, values: int, scales: int):
    """numpy views (values [P, L, 64, v], scales [P, L, 64, s] or None) of a page_first pool."""
    P, L, _ = a.shape
    v = a[:, :, : PAGE * values].reshape(P, L, PAGE, values)
    s = a[:, :, PAGE * values:].reshape(P, L, PAGE, scales) if scales else None
    return v, s


class DeepSeekV4TokenToKVPool(_PagePool):
    """The prefill's device pool (on this CPU miniature: host memory)."""

    def __init__(self, num_pages: int, index_k_dtype: str) -> None:
        super().__init__(num_pages, index_k_dtype, dp.idx_bytes(index_k_dtype), zeroed=True)

    def write_rows(self, pages: list[int], start: int, kv: np.ndarray, idx: np.ndarray) -> None:
        """Rows for token positions start.. of a sequence laid out on `pages` (the forward pass)."""
        n = kv.shape[0]
        if n == 0:
            return
        pos = np.arange(start, start + n)
        pg = np.asarray(pages, dtype=np.int64)[pos // PAGE]
        sl = pos % PAGE
        kv_v, kv_s = _views(self.kv_rows, _C4_VALUES, _C4_SCALES)
        iv, isc = _views(self.idx_rows, *_IDX_SPLIT[self.index_k_dtype])
        for layer in range(NUM_LAYERS):
            kv_v[pg, layer, sl] = kv[:, :_C4_VALUES]
            kv_s[pg, layer, sl] = kv[:, _C4_VALUES:]
            vb, sb = _IDX_SPLIT[self.index_k_dtype]
            iv[pg, layer, sl] = idx[:, :vb]
            if sb:
                isc[pg, layer, sl] = idx[:, vb:]

    def read_rows(self, pages: list[int], n: int) -> tuple[np.ndarray, np.ndarray]:
        """Per-token rows (kv [n, 584], idx [n, 256|132]) of layer 0, as the sender ships them."""
        pos = np.arange(n)
        pg = np.asarray(pages, dtype=np.int64)[pos // PAGE]
        sl = pos % PAGE
        kv_v, kv_s = _views(self.kv_rows, _C4_VALUES, _C4_SCALES)
        kv = np.concatenate([kv_v[pg, 0, sl], kv_s[pg, 0, sl]], axis=1)
        vb, sb = _IDX_SPLIT[self.index_k_dtype]
        iv, isc = _views(self.idx_rows, vb, sb)
        idx = iv[pg, 0, sl] if not sb else np.concatenate([iv[pg, 0, sl], isc[pg, 0, sl]], axis=1)
        return np.ascontiguousarray(kv), np.ascontiguousarray(idx)


class DeepSeekV4PagedHostPool(_PagePool):
    """The live HiCache host pool. Its row sizes come from the live device buffers, so bf16
    index-K (256 B/token) is sized right without any dtype table."""

    def __init__(self, device_pool: DeepSeekV4TokenToKVPool, num_pages: int) -> None:
        idx_token_bytes = device_pool.idx_rows.shape[2] // PAGE
        super().__init__(num_pages, device_pool.index_k_dtype, idx_token_bytes, zeroed=False)


class DSAIndexerPoolHost:
    """Host pool for the DSA indexer's index-K, with its own per-dtype sizing.

    With `indexer_host_pool_fix=off` it sizes rows at 132 B/token (the fp8 figure) whatever the
    dtype; the fix makes it 256 for bf16. The HiCache stack builder never constructs this class
    (the live path is DeepSeekV4PagedHostPool), so neither setting changes any byte the
    deployment moves: the seed's dead-code finding.
    """

    def __init__(self, num_pages: int, index_k_dtype: str, *, sizing_fix: bool) -> None:
        torch = _torch()
        per_token = dp.idx_bytes(index_k_dtype) if sizing_fix else dp.idx_bytes("fp8")
        self.index_k_dtype = index_k_dtype
        self.bytes_per_token = per_token
        self.buffer = torch.empty((num_pages, NUM_LAYERS, PAGE * per_token), dtype=torch.uint8)


@dataclass
class _Entry:
    length: int
    pages: list[int]
    keys: list[tuple[int, bytes]] = field(default_factory=list)
    last_used: float = 0.0


def _prefix_digests(tokens: np.ndarray, lengths: list[int]) -> dict[int, bytes]:
    """Digest of tokens[:n] for each n in lengths (ascending), hashing each byte once."""
    h = hashlib.blake2b(digest_size=16)
    raw = np.ascontiguousarray(tokens, dtype="<i8")
    out, prev = {}, 0
    for n in lengths:
        h.update(raw[prev:n].tobytes())
        out[n] = h.copy().digest()
        prev = n
    return out


class HiCache:
    """Prefix index over the host pool, with write-through and page / token-granular loads."""

    def __init__(self, device: DeepSeekV4TokenToKVPool, host: DeepSeekV4PagedHostPool, *,
                 geometry_bug: bool) -> None:
        self.device = device
        self.host = host
        self.dtype = device.index_k_dtype
        self.geometry_bug = geometry_bug
        self._by_key: dict[tuple[int, bytes], _Entry] = {}
        self._lengths: dict[int, int] = {}      # entry length -> how many entries have it
        self._refs: dict[int, int] = {}
        self.stats = {"lookups": 0, "hits": 0, "hit_tokens": 0, "partial_loads": 0,
                      "buggy_partial_loads": 0, "evictions": 0}
        self._lock = threading.Lock()
        self._ticks = itertools.count(1)         # LRU order: deterministic, not the wall clock

    # --- lookup ----------------------------------------------------------------------------
    def match(self, tokens: np.ndarray) -> tuple[_Entry | None, int]:
        """Longest cached prefix: an entry's full length, or a page boundary inside one."""
        n_tok = len(tokens)
        with self._lock:
            self.stats["lookups"] += 1
            cands = set(range(PAGE, n_tok + 1, PAGE))
            cands.update(n for n in self._lengths if n <= n_tok)
            if not cands:
                return None, 0
            digests = _prefix_digests(tokens, sorted(cands))
            for n in sorted(cands, reverse=True):
                e = self._by_key.get((n, digests[n]))
                if e is not None:
                    e.last_used = next(self._ticks)
                    self.stats["hits"] += 1
                    self.stats["hit_tokens"] += n
                    return e, n
        return None, 0

    def load(self, entry: _Entry, n: int, dst_pages: list[int]) -> int:
        """Load the first n cached tokens into dst_pages; returns how many tokens were loaded."""
        full, part = divmod(n, PAGE)
        if self.dtype == "fp8":
            part = 0                 # fp8 index-K is page-aligned-only: recompute the rest
        geo = IDX_GEOMETRY[self.dtype]
        if full:
            src, dst = _ids(entry.pages[:full]), _ids(dst_pages[:full])
            _transfer(self.host.kv, self.device.kv, src, dst, geometry="c4_latent",
                     granularity="page", layout="page_first", page_size=PAGE)
            _transfer(self.host.idx, self.device.idx, src, dst, geometry=geo,
                      granularity="page", layout="page_first", page_size=PAGE)
        if part:
            slots = _ids(range(part))
            src = entry.pages[full] * PAGE + slots
            dst = dst_pages[full] * PAGE + slots
            _transfer(self.host.kv, self.device.kv, src, dst, geometry="c4_latent",
                      granularity="token", layout="page_first", page_size=PAGE)
            # The bf16 patch's token-granular index-K copy; geometry_fix=off keeps the
            # hard-coded C4 latent geometry of transfer_cache_dsv4_mla (the seed's bug).
            stride = "c4_latent" if self.geometry_bug else None
            _transfer(self.host.idx, self.device.idx, src, dst, geometry=geo,
                      granularity="token", layout="page_first", page_size=PAGE,
                      stride_geometry=stride)
            self.stats["partial_loads"] += 1
            if stride:
                self.stats["buggy_partial_loads"] += 1
        return full * PAGE + part

    # --- insert (write-through) ------------------------------------------------------------
    def insert(self, tokens: np.ndarray, dev_pages: list[int], shared: _Entry | None,
               shared_tokens: int) -> None:
        """Back the sequence up to the host; full pages of a matched entry are shared."""
        n_tok = len(tokens)
        n_pages = -(-n_tok // PAGE)
        keep = min(shared_tokens // PAGE, n_pages) if shared is not None else 0
        with self._lock:
            need = n_pages - keep
            new = self._alloc_host(need, protect=shared)
            if new is None:
                return
            pages = (list(shared.pages[:keep]) if keep else []) + new
            for p in pages[:keep]:
                self._refs[p] = self._refs.get(p, 0) + 1
            for p in new:
                self._refs[p] = 1
            lengths = list(range(PAGE, n_tok + 1, PAGE))
            if n_tok % PAGE:
                lengths.append(n_tok)
            digests = _prefix_digests(tokens, lengths)
            entry = _Entry(length=n_tok, pages=pages, last_used=next(self._ticks))
            for n in lengths:
                key = (n, digests[n])
                if key not in self._by_key:
                    self._by_key[key] = entry
                    entry.keys.append(key)
            self._lengths[n_tok] = self._lengths.get(n_tok, 0) + 1
        if need:
            src, dst = _ids(dev_pages[keep:n_pages]), _ids(new)
            _transfer(self.device.kv, self.host.kv, src, dst, geometry="c4_latent",
                      granularity="page", layout="page_first", page_size=PAGE)
            _transfer(self.device.idx, self.host.idx, src, dst,
                      geometry=IDX_GEOMETRY[self.dtype], granularity="page",
                      layout="page_first", page_size=PAGE)

    def _alloc_host(self, n: int, protect: _Entry | None) -> list[int] | None:
        while self.host.free_pages < n:
            victims = [e for e in {id(e): e for e in self._by_key.values()}.values()
                       if e is not protect]
            if not victims:
                return None
            self._evict(min(victims, key=lambda e: e.last_used))
        return self.host.alloc(n)

    def _evict(self, e: _Entry) -> None:
        for key in e.keys:
            self._by_key.pop(key, None)
        self._lengths[e.length] -= 1
        if not self._lengths[e.length]:
            del self._lengths[e.length]
        freed = []
        for p in e.pages:
            self._refs[p] -= 1
            if not self._refs[p]:
                del self._refs[p]
                freed.append(p)
        self.host.free(freed)
        self.stats["evictions"] += 1


def build_hicache_stack(device: DeepSeekV4TokenToKVPool, *, host_pages: int,
                        geometry_bug: bool) -> HiCache:
    """The HiCache stack as the seed's builder wires it: the host pool is always
    DeepSeekV4PagedHostPool; DSAIndexerPoolHost is not constructed here or anywhere else."""
    host = DeepSeekV4PagedHostPool(device, host_pages)
    return HiCache(device, host, geometry_bug=geometry_bug)
