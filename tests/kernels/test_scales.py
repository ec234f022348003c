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


def test_page_order_only_for_fp8_rows_large_enough_to_repay_two_launches():
    from wb_kernels.scales import wants_page_order

    fp8, c4 = GEOMETRIES["index_k_fp8"], GEOMETRIES["c4_latent"]
    per_mb = (1 << 20) // (4 * fp8.bytes_per_token)     # fp8 tokens per MiB over 4 layers
    assert not wants_page_order(fp8, 32 * per_mb, 4)     # measured slower at 33.6 MB
    assert wants_page_order(fp8, 128 * per_mb, 4)        # faster at 134 MB and 537 MB
    assert not wants_page_order(c4, 10 ** 7, 4)           # c4: no gain measured
    assert not wants_page_order(GEOMETRIES["index_k_bf16"], 10 ** 7, 4)
