// Page order of device ids (kernels/scales.py device_page_order): the lists that move fp8 rows'
// 4 B scales through a compact scratch pool in source-page order, then destination-page order.
// Two ways to make them, same lists: a counting sort (atomics on per-page counters) and a radix
// sort of int32 page keys (cub::DeviceRadixSort over the bits the pool's page count needs).
#include "transfer.cuh"

#include <algorithm>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

namespace wb {
namespace {

// Page order by a counting sort (kernels/scales.py device_page_order): each pair takes a rank
// in the bucket of its source page and in that of its destination page (atomics on per-page
// counters; pairs with a bad id go to one last bucket per side), the counters are scanned,
// and each pair writes its entries at bucket start + rank. The order inside a page is the
// atomics' order: any order groups a page's 4 B scales on neighbouring threads.
__device__ __forceinline__ bool order_buckets(const int64_t* si, const int64_t* di, int64_t i,
                                              const OrderArgs& o, int64_t& st, int64_t& dt,
                                              int64_t& bs, int64_t& bd) {
  st = si[i];
  dt = di[i];
  const bool ok = uint64_t(st) < uint64_t(o.s_lim) && uint64_t(dt) < uint64_t(o.d_lim);
  bs = ok ? st / o.page_size : o.s_pages;
  bd = ok ? o.s_pages + 1 + dt / o.page_size : o.s_pages + 1 + o.d_pages;
  return ok;
}

__global__ void __launch_bounds__(256) order_count_kernel(const int64_t* si, const int64_t* di,
                                                          OrderArgs o, int32_t* counts,
                                                          int32_t* ranks) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < o.n; i += step) {
    int64_t st, dt, bs, bd;
    order_buckets(si, di, i, o, st, dt, bs, bd);
    ranks[i] = atomicAdd(counts + bs, 1);
    ranks[o.n + i] = atomicAdd(counts + bd, 1);
  }
}

// out: [4, n] int64: gather src ids, gather scratch slots (0..n-1), scatter scratch slots,
// scatter dst ids, as kernels/scales.py page_order_ids lays them out (-1 for bad pairs).
__global__ void __launch_bounds__(256) order_place_kernel(const int64_t* si, const int64_t* di,
                                                          OrderArgs o, const int32_t* starts,
                                                          const int32_t* ranks, int64_t* out) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x, n = o.n;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t st, dt, bs, bd;
    const bool ok = order_buckets(si, di, i, o, st, dt, bs, bd);
    const int64_t ps = int64_t(starts[bs]) + ranks[i];            // slot in source order
    const int64_t pd = int64_t(starts[bd]) - n + ranks[n + i];    // place in destination order
    out[ps] = ok ? st : -1;
    out[n + i] = i;
    out[2 * n + pd] = ps;
    out[3 * n + pd] = ok ? dt : -1;
  }
}

// Radix sort: keys are the pages of the pairs (a bad pair's key is the page count, so it sorts
// last), values the pair numbers; cub sorts stably, so inside a page pairs keep their order.
__global__ void __launch_bounds__(256) radix_keys_kernel(const int64_t* si, const int64_t* di,
                                                         OrderArgs o, uint32_t* ks, uint32_t* kd,
                                                         int32_t* iota) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < o.n; i += step) {
    const int64_t st = si[i], dt = di[i];
    const bool ok = uint64_t(st) < uint64_t(o.s_lim) && uint64_t(dt) < uint64_t(o.d_lim);
    ks[i] = uint32_t(ok ? st / o.page_size : o.s_pages);
    kd[i] = uint32_t(ok ? dt / o.page_size : o.d_pages);
    iota[i] = int32_t(i);
  }
}

// Source order: gather src ids, scratch slot k, and each pair's slot (for the scatter lists).
__global__ void __launch_bounds__(256) radix_gather_kernel(const int64_t* si, OrderArgs o,
                                                           const uint32_t* ks, const int32_t* by_src,
                                                           int32_t* slot, int64_t* out) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x, n = o.n;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    const int32_t p = by_src[k];
    out[k] = ks[k] < uint32_t(o.s_pages) ? si[p] : -1;
    out[n + k] = k;
    slot[p] = int32_t(k);
  }
}

// Destination order: scratch slots and dst ids.
__global__ void __launch_bounds__(256) radix_scatter_kernel(const int64_t* di, OrderArgs o,
                                                            const uint32_t* kd,
                                                            const int32_t* by_dst,
                                                            const int32_t* slot, int64_t* out) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x, n = o.n;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    const int32_t p = by_dst[k];
    out[2 * n + k] = slot[p];
    out[3 * n + k] = kd[k] < uint32_t(o.d_pages) ? di[p] : -1;
  }
}

// Bits that keys 0..pages (pages: the bad pairs' key) need.
int key_bits(int64_t pages) {
  int b = 1;
  while (b < 31 && (int64_t(1) << b) <= pages) ++b;
  return b;
}

unsigned order_blocks(int64_t n) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, 2048)));
}

}  // namespace

cudaError_t page_order_launch(const int64_t* si, const int64_t* di, const OrderArgs& o,
                              int32_t* work, void* temp, size_t& temp_bytes, int64_t* out,
                              cudaStream_t stream) {
  const int64_t buckets = o.s_pages + o.d_pages + 2;
  int32_t* counts = work;
  int32_t* starts = work + buckets;
  int32_t* ranks = work + 2 * buckets;
  if (temp == nullptr)
    return cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts, starts, int(buckets), stream);
  if (o.n <= 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(counts, 0, size_t(buckets) * sizeof(int32_t), stream);
  if (e != cudaSuccess) return e;
  const unsigned blocks = order_blocks(o.n);
  order_count_kernel<<<blocks, 256, 0, stream>>>(si, di, o, counts, ranks);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  e = cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, starts, int(buckets), stream);
  if (e != cudaSuccess) return e;
  order_place_kernel<<<blocks, 256, 0, stream>>>(si, di, o, starts, ranks, out);
  return cudaGetLastError();
}

cudaError_t page_order_radix_launch(const int64_t* si, const int64_t* di, const OrderArgs& o,
                                    int32_t* work, void* temp, size_t& temp_bytes, int64_t* out,
                                    cudaStream_t stream) {
  const int64_t n = o.n;
  uint32_t* ks = reinterpret_cast<uint32_t*>(work);
  uint32_t* kd = ks + n;
  uint32_t* ks_out = kd + n;
  uint32_t* kd_out = ks_out + n;
  int32_t* iota = work + 4 * n;
  int32_t* by_src = iota + n;
  int32_t* by_dst = by_src + n;
  int32_t* slot = by_dst + n;
  const int sb = key_bits(o.s_pages), db = key_bits(o.d_pages);
  if (temp == nullptr) {   // the larger of the two sorts' scratch
    size_t a = 0, b = 0;
    cudaError_t e = cub::DeviceRadixSort::SortPairs(nullptr, a, ks, ks_out, iota, by_src, int(n),
                                                    0, sb, stream);
    if (e == cudaSuccess)
      e = cub::DeviceRadixSort::SortPairs(nullptr, b, kd, kd_out, iota, by_dst, int(n), 0, db,
                                          stream);
    temp_bytes = std::max(a, b);
    return e;
  }
  if (n <= 0) return cudaSuccess;
  const unsigned blocks = order_blocks(n);
  radix_keys_kernel<<<blocks, 256, 0, stream>>>(si, di, o, ks, kd, iota);
  cudaError_t e = cudaGetLastError();
  size_t room = temp_bytes;   // each sort is handed the whole scratch (sized for the larger)
  if (e == cudaSuccess)
    e = cub::DeviceRadixSort::SortPairs(temp, room, ks, ks_out, iota, by_src, int(n), 0, sb,
                                        stream);
  room = temp_bytes;
  if (e == cudaSuccess)
    e = cub::DeviceRadixSort::SortPairs(temp, room, kd, kd_out, iota, by_dst, int(n), 0, db,
                                        stream);
  if (e != cudaSuccess) return e;
  radix_gather_kernel<<<blocks, 256, 0, stream>>>(si, o, ks_out, by_src, slot, out);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  radix_scatter_kernel<<<blocks, 256, 0, stream>>>(di, o, kd_out, by_dst, slot, out);
  return cudaGetLastError();
}

}  // namespace wb
