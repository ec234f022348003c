"""When the scale blocks of host rows go through a 2D copy (kernels.scales.wants_dma): the
whole scale region of the host pool moves, so only transfers that name enough rows per host
page gain (no GPU needed)."""

from wb_kernels import GEOMETRIES
from wb_kernels.geometry import PoolShape
from wb_kernels.scales import wants_dma


def _shape(pages, layers=4, geometry="index_k_fp8"):
    return PoolShape.of((pages, layers, GEOMETRIES[geometry].page_bytes(64)), "page_first")


def test_dense_random_host_rows_take_the_2d_copy():
    # the bench's rows: 128 MB of random tokens from a 768 MB host pool (1 token in 6)
    pages = (768 << 20) // (4 * 64 * 132)
    assert wants_dma(GEOMETRIES["index_k_fp8"], _shape(pages), (128 << 20) // (4 * 132), 64)
    pages = (768 << 20) // (4 * 64 * 584)
    assert wants_dma(GEOMETRIES["c4_latent"], _shape(pages, geometry="c4_latent"),
                     (128 << 20) // (4 * 584), 64)


def test_sparse_rows_and_rows_without_scales_do_not():
    # 64 tokens from a large pool: the 2D copy would move the whole scale region for them
    assert not wants_dma(GEOMETRIES["index_k_fp8"], _shape(24000), 64, 64)
    # c4's scale blocks are twice fp8's (8 B a token): it needs twice the rows per page
    assert wants_dma(GEOMETRIES["index_k_fp8"], _shape(1000), 4 * 1000, 64)
    assert not wants_dma(GEOMETRIES["c4_latent"], _shape(1000, geometry="c4_latent"),
                         4 * 1000, 64)
    assert not wants_dma(GEOMETRIES["index_k_bf16"], _shape(10, geometry="index_k_bf16"),
                         10 ** 6, 64)
    assert not wants_dma(GEOMETRIES["index_k_fp8"], _shape(10), 0, 64)


def test_page_order_only_for_rows_with_scales_large_enough_to_repay_two_launches():
    from wb_kernels.scales import wants_page_order

    fp8, c4 = GEOMETRIES["index_k_fp8"], GEOMETRIES["c4_latent"]
    per_mb = (1 << 20) // (4 * fp8.bytes_per_token)     # fp8 tokens per MiB over 4 layers
    c4_mb = (1 << 20) // (4 * c4.bytes_per_token)
    assert not wants_page_order(fp8, 32 * per_mb, 4)     # measured slower at 33.6 MB
    assert wants_page_order(fp8, 128 * per_mb, 4)        # faster at 134 MB and 537 MB
    assert not wants_page_order(c4, 128 * c4_mb, 4)      # c4: slower up to 128 MB (run 14)
    assert wants_page_order(c4, 300 * c4_mb, 4)          # 4-5% faster at 256-512 MB
    assert not wants_page_order(GEOMETRIES["index_k_bf16"], 10 ** 7, 4)


def test_new_ids_take_one_launch_by_default_neither_sort_nor_split_pays(monkeypatch):
    """Per call, a sort after the values lost at every size (run 13); beside them the radix sort
    gained 7% on random fp8 ids at 256-512 MB but cost sequential ids 14%, and the two unsorted
    passes never beat one launch (NOTES.md runs 13-14): both gates are off, the counting sort
    serves reused ids; opened, the sort per call takes fp8 rows only, the split too."""
    from wb_kernels import scales

    fp8, c4 = GEOMETRIES["index_k_fp8"], GEOMETRIES["c4_latent"]
    big = 10 ** 7
    assert scales.ORDER_SORT == "count" and scales.ORDER_OVERLAP
    assert not scales.wants_page_order(fp8, big, 4, per_call=True)
    monkeypatch.setattr(scales, "NEW_ORDER_MIN_BYTES", 0)
    assert scales.wants_page_order(fp8, 1, 4, per_call=True)
    assert not scales.wants_page_order(c4, big, 4, per_call=True)
    assert not scales.wants_split(fp8, big, 4)
    monkeypatch.setattr(scales, "SPLIT_MIN_BYTES", 0)
    assert scales.wants_split(fp8, 1, 4) and not scales.wants_split(c4, big, 4)
    assert not scales.wants_split(GEOMETRIES["index_k_bf16"], big, 4)


def test_blocks_pay_when_the_rows_outnumber_the_block_requests():
    from wb_kernels.scales import wants_blocks

    fp8, c4 = GEOMETRIES["index_k_fp8"], GEOMETRIES["c4_latent"]
    # an fp8 page's scale block is 256 B: 2 requests; 32 rows named in it save 30
    assert wants_blocks(fp8, 100, 32 * 100, 64)
    # one row per touched page: the block costs more requests than the row's own scale
    assert not wants_blocks(fp8, 100, 100, 64)
    # c4 blocks are 512 B (4 requests): 4 rows per page is not enough, 8 are
    assert not wants_blocks(c4, 100, 400, 64)
    assert wants_blocks(c4, 100, 800, 64)
    assert not wants_blocks(GEOMETRIES["index_k_bf16"], 1, 10 ** 6, 64)


def test_random_pages_is_the_expected_count_of_pages_touched():
    import torch

    from wb_kernels.scales import random_pages

    gen = torch.Generator().manual_seed(3)
    pages, n = 500, 1200
    seen = [torch.unique(torch.randperm(pages * 64, generator=gen)[:n] // 64).numel()
            for _ in range(20)]
    assert abs(sum(seen) / len(seen) - random_pages(n, pages)) < 5
    assert random_pages(0, pages) == 0
    assert random_pages(10, 1) == 1


def test_block_ids_name_the_touched_pages_only():
    import torch

    from wb_kernels.scales import block_ids, device_block_ids

    ids = torch.tensor([130, 5, 131, 7, 700])
    pages, touched = block_ids(ids, 64)
    assert touched == 3 and pages.tolist() == [0, 2, 10]
    # the device form (run here on the cpu): every page of the pool, -1 where no id lands;
    # bad ids (negative, past the pool) touch nothing
    marked = device_block_ids(torch.tensor([130, 5, -3, 131, 7, 700, 12 * 64]), 64, 12, 12 * 64)
    assert marked.tolist() == [0, -1, 2] + [-1] * 7 + [10, -1]


def _plan(n_pages, host_ids, geometry="index_k_fp8"):
    from wb_kernels.api import Plan

    geo = GEOMETRIES[geometry]
    return Plan(src_idx=host_ids, dst_idx=host_ids.clone(), geometry=geo, page_size=64,
                src_shape=_shape(n_pages, geometry=geometry))


def test_a_plan_takes_the_blocks_when_its_cpu_ids_touch_few_pages():
    import torch

    from wb_kernels.build import _h2d_scale_path

    gen = torch.Generator().manual_seed(4)
    pages = 20000
    few = torch.randperm(pages, generator=gen)[:1000]
    by_page = (few[:, None] * 64 + torch.arange(32)).reshape(-1)   # 32 rows in 1 page in 20
    clustered = by_page[torch.randperm(by_page.numel(), generator=gen)]
    assert _h2d_scale_path(_plan(pages, clustered), "auto") == "blocks"
    # the same rows page by page keep one launch (their scales coalesce: NOTES.md run 9)
    assert _h2d_scale_path(_plan(pages, by_page), "auto") == "ordered"
    assert _h2d_scale_path(_plan(pages, by_page), "blocks") == "blocks"
    dense = torch.randperm(pages * 64, generator=gen)[:pages * 11]     # every page, 11 rows
    assert _h2d_scale_path(_plan(pages, dense), "auto") == "h2d"
    scattered = torch.randperm(pages * 64, generator=gen)[:pages // 2]  # ~1 row a page
    assert _h2d_scale_path(_plan(pages, scattered), "auto") is None
    assert _h2d_scale_path(_plan(pages, scattered), "blocks") == "blocks"
    assert _h2d_scale_path(_plan(pages, scattered), "serial") == "h2d"


def test_device_ids_never_copy_the_whole_scale_region():
    """Device ids (not read) whose random-ids estimate says the whole region takes the blocks
    of the pages they touch instead (never more bytes; faster when fewer pages are touched);
    where the estimate keeps the scales with the values, so do they."""
    from wb_kernels.scales import device_ids_path, h2d_path, random_pages

    geo, pages = GEOMETRIES["index_k_fp8"], 20000
    shape = _shape(pages)
    dense = pages * 11
    assert h2d_path(geo, shape, dense, 64, random_pages(dense, pages)) == "h2d"
    assert device_ids_path(geo, shape, dense, 64) == "blocks"
    assert device_ids_path(geo, shape, pages // 2, 64) is None


def test_what_a_plan_derives_from_its_ids_follows_them():
    """Uploads, staged forms, sorted and touched pages are kept on the plan while its ids are
    unchanged; ids changed in place are derived again; inference tensors (no version
    counter) every time."""
    import torch

    from wb_kernels.api import Plan
    from wb_kernels.build import _derived

    made = []

    def make():
        made.append(1)
        return len(made)

    plan = Plan(src_idx=torch.tensor([1, 2, 3]), dst_idx=torch.tensor([4, 5, 6]))
    assert _derived(plan, "x", make) == 1
    assert _derived(plan, "x", make) == 1          # kept
    plan.dst_idx[0] = 7                            # in place: a new version
    assert _derived(plan, "x", make) == 2
    assert _derived(plan, "x", make) == 2
    with torch.inference_mode():
        plan = Plan(src_idx=torch.tensor([1, 2]), dst_idx=torch.tensor([3, 4]))
    assert _derived(plan, "x", make) == 3
    assert _derived(plan, "x", make) == 4          # no counter: made again


def test_page_stats_count_pages_and_runs_in_order():
    import torch

    from wb_kernels.scales import host_page_stats, page_grouped

    by_page = torch.tensor([5, 1, 63, 64, 100, 70, 700])        # pages 0, 0, 0, 1, 1, 1, 10
    assert host_page_stats(by_page, 64) == (3, 3)
    assert page_grouped(3, 3)
    mixed = torch.tensor([5, 64, 1, 100, 63, 70, 700])          # pages 0, 1, 0, 1, 0, 1, 10
    assert host_page_stats(mixed, 64) == (3, 7)
    assert not page_grouped(3, 7)
    assert host_page_stats(torch.tensor([], dtype=torch.int64), 64) == (0, 0)
    assert not page_grouped(0, 0)
