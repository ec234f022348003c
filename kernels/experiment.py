"""The kernel-level A/B arm of the `token-granular-geometry` hypothesis (target `kernel`).

One arm copies bf16 index-K rows token by token from a host pool into a device pool, as a
HiCache load of partial pages does, with the right geometry (geometry_fix on) or with the C4
latent strides (off), and counts what differs from the reference copy.
"""

from __future__ import annotations

__all__ = ["run_geometry_arm"]

GEOMETRY = "index_k_bf16"
BUGGY_STRIDES = "c4_latent"
PAGE_SIZE = 64
LAYERS = 2


def _page_lengths(tokens: int, partial_pages: bool, gen):
    """Tokens per page: random prefixes 1..63 (partial) or whole pages, summing to `tokens`."""
    import torch

    ps = PAGE_SIZE
    if partial_pages:
        lengths = torch.randint(1, ps, (tokens,), generator=gen)   # enough even if all are 1
    else:
        lengths = torch.full((-(-tokens // ps),), ps, dtype=torch.int64)
    cum = torch.cumsum(lengths, 0)
    k = int(torch.searchsorted(cum, torch.tensor(tokens))) + 1
    lengths = lengths[:k].clone()
    lengths[-1] -= int(cum[k - 1]) - tokens
    return lengths


def _index_sets(lengths, host_pages: int, dev_pages: int, gen):
    """Prefix runs of random pages, slot for slot (a HiCache partial-page load)."""
    import torch

    ps = PAGE_SIZE
    k = lengths.numel()
    sp = torch.randperm(host_pages, generator=gen)[:k]
    dp = torch.randperm(dev_pages, generator=gen)[:k]
    slots = torch.arange(ps)
    keep = slots[None, :] < lengths[:, None]
    return (sp[:, None] * ps + slots)[keep], (dp[:, None] * ps + slots)[keep]


def run_geometry_arm(*, geometry_fix: bool, seed: int, tokens: int = 4096,
                     partial_pages: bool = True, impl: str = "auto") -> dict:
    """One arm on fresh random data (from `seed`); the destination is poisoned first.

    Returns corrupted_tokens (destination tokens with any wrong byte in any layer, copied or
    not), mismatch_bytes, tokens (copied), bytes (moved by the right copy), impl, device.
    """
    import torch

    from . import api
    from .cases import make_pool
    from .reference import reference_transfer
    from workbench.errors import KernelError

    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise KernelError(f"tokens must be a positive int, got {tokens!r}")
    gen = torch.Generator().manual_seed(int(seed))
    ps = PAGE_SIZE
    lengths = _page_lengths(tokens, partial_pages, gen)
    # Pools with room to spare, so that mis-addressed rows land on tokens that exist.
    host_pages = dev_pages = 2 * lengths.numel() + 8
    host = make_pool(GEOMETRY, "page_first", host_pages, LAYERS, ps, gen=gen)
    dev0 = make_pool(GEOMETRY, "page_first", dev_pages, LAYERS, ps, gen=gen, fill="poison")
    si, di = _index_sets(lengths, host_pages, dev_pages, gen)

    want = dev0.clone()
    reference_transfer(host, want, si, di, geometry=api.get_geometry(GEOMETRY),
                       granularity="token", layout="page_first", page_size=ps)

    use_cuda = impl != "reference" and torch.version.cuda is not None and torch.cuda.is_available()
    if use_cuda:
        src, dst = host.pin_memory(), dev0.to("cuda")
    else:
        src, dst = host, dev0.clone()
    plan = api.plan_transfer(src, dst, si, di, geometry=GEOMETRY, granularity="token",
                             layout="page_first", page_size=ps,
                             stride_geometry=None if geometry_fix else BUGGY_STRIDES, impl=impl)
    api.run_plan(plan)
    if plan.impl == "cuda":
        torch.cuda.synchronize()
    got = dst.cpu()
    diff = got != want                                    # [pages, layers, page_bytes]
    per_token = diff.view(dev_pages, LAYERS, ps, 256).any(dim=3).any(dim=1)
    return {
        "corrupted_tokens": int(per_token.sum()),
        "mismatch_bytes": int(diff.sum()),
        "tokens": int(si.numel()),
        "bytes": int(si.numel()) * LAYERS * 256,
        "impl": plan.impl,
        "device": torch.cuda.get_device_name(plan.device) if plan.impl == "cuda" else "cpu",
    }
