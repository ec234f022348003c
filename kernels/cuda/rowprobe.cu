// Random-row ceiling probe: what the H200 gives for gather-copies of random rows with no format
// logic, against a copy of the same payload timed in the same run, and what the c4/fp8 page
// formats cost on top (scale blocks), with the strategies that could close the gap:
//   T1/T4   one 16/8/4 B chunk per thread, 1 or 4 in flight (plain / nc-no-L1 + evict-first)
//   W4/W8   a warp takes 4/8 x 32 consecutive chunks (whole rows), all loads before any store
//   B4      Hopper bulk copies: each thread moves its rows global -> shared -> global with
//           cp.async.bulk, 4 rows in flight per thread (mbarrier-completed loads)
//   srt/2srt  T4 with the pairs sorted by source id / sorted on both sides (locality bound)
// Formats (page_first pools of 4 layers, 64 slots per page, values then the page's scales):
//   fmt     values and scales per pair (the kernel's fused form), pair-major, 16 B values
//   vals    values only (what the scale block costs: fmt - vals)
//   ph3     values + scales in page order: gather the scales in source-sorted order into an
//           L2-sized scratch, scatter them in destination-sorted order (sorts done on the host
//           here; the device sort of the ids is timed separately with cub)
// Host rows (pinned, mapped; zero copy): fmt and vals through the link, and a 2D DMA of the
// host pool's scale blocks (the cost of staging only the scales).
// Every timed kernel is checked: dst is cleared first, then every pair's bytes are compared.
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 rowprobe.cu -o rowprobe
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <cstring>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));      \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

namespace {

struct FastDiv {  // unsigned 32-bit division by a run-time constant (dividends < 2^31)
  uint32_t d = 1, m = 0, s = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t div) : d(div) {
    for (s = 0; s < 32; ++s)
      if ((1u << s) >= div) break;
    uint64_t one = 1;
    m = static_cast<uint32_t>(((one << 32) * ((one << s) - div)) / div + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
};

template <int V> struct VecT;
template <> struct VecT<16> { using T = uint4; };
template <> struct VecT<8> { using T = uint2; };
template <> struct VecT<4> { using T = uint32_t; };

template <int V, int H>
__device__ __forceinline__ typename VecT<V>::T ld(const uint8_t* p) {
  using T = typename VecT<V>::T;
  if constexpr (H == 1 && V == 16) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
  } else if constexpr (H == 1 && V == 8) {
    uint2 r;
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
    return r;
  } else if constexpr (H == 1 && V == 4) {
    uint32_t r;
    asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(r) : "l"(p));
    return r;
  } else {
    return *reinterpret_cast<const T*>(p);
  }
}

template <int V, int H>
__device__ __forceinline__ void st(uint8_t* p, typename VecT<V>::T v) {
  using T = typename VecT<V>::T;
  if constexpr (H == 1) __stcs(reinterpret_cast<T*>(p), v);
  else *reinterpret_cast<T*>(p) = v;
}

// ---------------------------------------------------------------- packed random rows
struct RowArgs {
  const uint8_t* src;
  uint8_t* dst;
  const uint32_t* sidx;
  const uint32_t* didx;
  uint32_t n, chunks, total, R;
  FastDiv cdiv;
};

// U chunks per thread. WARP: a warp's U x 32 chunks are consecutive (whole rows per warp),
// else a thread's chunks are blockDim apart.
template <int V, int U, int H, bool WARP>
__global__ void __launch_bounds__(256) rows_thread(RowArgs a) {
  using T = typename VecT<V>::T;
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T v[U];
  uint64_t doff[U];
  bool ok[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const uint32_t g = WARP ? blockIdx.x * 256u * U + warp * 32u * U + u * 32u + lane
                            : blockIdx.x * 256u * U + u * 256u + threadIdx.x;
    ok[u] = g < a.total;
    if (!ok[u]) continue;
    const uint32_t r = a.cdiv.div(g), c = g - r * a.chunks;
    const uint64_t soff = uint64_t(__ldg(a.sidx + r)) * a.R + c * V;
    doff[u] = uint64_t(__ldg(a.didx + r)) * a.R + c * V;
    v[u] = ld<V, H>(a.src + soff);
  }
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (ok[u]) st<V, H>(a.dst + doff[u], v[u]);
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

__device__ __forceinline__ void bar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}

// Each thread moves rows r0, r0 + nthreads, ... through STAGES shared buffers of its own.
template <int STAGES>
__global__ void __launch_bounds__(32) rows_bulk(RowArgs a) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[32 * STAGES];
  const uint32_t t = threadIdx.x, R = a.R;
  const uint32_t buf = smem_addr(smem + size_t(t) * STAGES * R), bar = smem_addr(bars + t * STAGES);
  for (int s = 0; s < STAGES; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar + 8 * s) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const uint32_t nth = gridDim.x * 32, r0 = blockIdx.x * 32 + t;
  auto load = [&](uint32_t k, uint32_t s) {
    const uint32_t r = r0 + k * nth;
    if (r < a.n) bulk_load(buf + s * R, a.src + uint64_t(a.sidx[r]) * R, R, bar + 8 * s);
  };
  for (uint32_t s = 0; s < STAGES; ++s) load(s, s);
  for (uint32_t k = 0; r0 + k * nth < a.n; ++k) {
    const uint32_t s = k % STAGES;
    bar_wait(bar + 8 * s, (k / STAGES) & 1);
    uint8_t* d = a.dst + uint64_t(a.didx[r0 + k * nth]) * R;
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(d), "r"(buf + s * R), "r"(R) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    if (k >= 1) {  // the previous row's store has read its buffer: refill that stage
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      load(k - 1 + STAGES, (k - 1) % STAGES);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

__global__ void verify_rows(const uint8_t* src, const uint8_t* dst, const uint32_t* sidx,
                            const uint32_t* didx, uint32_t n, uint32_t R, unsigned long long* bad) {
  const uint64_t words = uint64_t(n) * (R / 4);
  for (uint64_t w = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; w < words; w += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t r = uint32_t(w / (R / 4)), c = uint32_t(w % (R / 4)) * 4;
    const uint32_t x = *reinterpret_cast<const uint32_t*>(src + uint64_t(sidx[r]) * R + c);
    const uint32_t y = *reinterpret_cast<const uint32_t*>(dst + uint64_t(didx[r]) * R + c);
    if (x != y) atomicAdd(bad, 1ull);
  }
}

// ---------------------------------------------------------------- page formats
struct Fmt {
  const uint8_t* src;
  uint8_t* dst;
  const uint32_t* sidx;
  const uint32_t* didx;
  uint32_t n, L, ps, vb, sb, vchunks, fchunks, total;
  uint64_t row, page;  // row = ps * (vb + sb), page = L * row
  FastDiv ldiv, psdiv, fdiv, ndiv;
};

__device__ __forceinline__ uint64_t val_off(const Fmt& a, uint32_t id, uint32_t l) {
  const uint32_t p = a.psdiv.div(id), s = id - p * a.ps;
  return uint64_t(p) * a.page + uint64_t(l) * a.row + uint64_t(s) * a.vb;
}

__device__ __forceinline__ uint64_t scale_off(const Fmt& a, uint32_t id, uint32_t l) {
  const uint32_t p = a.psdiv.div(id), s = id - p * a.ps;
  return uint64_t(p) * a.page + uint64_t(l) * a.row + uint64_t(a.ps) * a.vb + uint64_t(s) * a.sb;
}

// Pair-major items (a pair's layers adjacent); chunk c < vchunks a 16 B value chunk, else the
// SV-byte scale (SCALES only).
template <int SV, int U, bool SCALES>
__global__ void __launch_bounds__(256) fmt_copy(Fmt a) {
  using T1 = typename VecT<SV>::T;
  uint4 v[U];
  T1 w[U];
  uint64_t doff[U];
  bool ok[U], sc[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const uint32_t g = blockIdx.x * 256u * U + u * 256u + threadIdx.x;
    ok[u] = g < a.total;
    sc[u] = false;
    if (!ok[u]) continue;
    const uint32_t item = a.fdiv.div(g), c = g - item * a.fchunks;
    const uint32_t i = a.ldiv.div(item), l = item - i * a.L;
    const uint32_t s = __ldg(a.sidx + i), d = __ldg(a.didx + i);
    if (SCALES && c >= a.vchunks) {
      sc[u] = true;
      doff[u] = scale_off(a, d, l);
      w[u] = ld<SV, 0>(a.src + scale_off(a, s, l));
    } else {
      doff[u] = val_off(a, d, l) + c * 16u;
      v[u] = ld<16, 1>(a.src + val_off(a, s, l) + c * 16u);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if (!ok[u]) continue;
    if (sc[u]) st<SV, 0>(a.dst + doff[u], w[u]);
    else st<16, 1>(a.dst + doff[u], v[u]);
  }
}

// Scales in page order: layer-major, j = position in the source-sorted pair list.
template <int SV>
__global__ void scale_gather(Fmt a, const uint32_t* s_sorted, uint8_t* tmp) {
  const uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= a.n * a.L) return;
  const uint32_t l = a.ndiv.div(g), j = g - l * a.n;
  *reinterpret_cast<typename VecT<SV>::T*>(tmp + uint64_t(g) * SV) =
      ld<SV, 0>(a.src + scale_off(a, s_sorted[j], l));
}

// k = position in the destination-sorted list; jpos[k] its position in the source-sorted one.
template <int SV>
__global__ void scale_scatter(Fmt a, const uint32_t* d_sorted, const uint32_t* jpos, const uint8_t* tmp) {
  const uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= a.n * a.L) return;
  const uint32_t l = a.ndiv.div(g), k = g - l * a.n;
  st<SV, 0>(a.dst + scale_off(a, d_sorted[k], l),
            *reinterpret_cast<const typename VecT<SV>::T*>(tmp + (uint64_t(l) * a.n + jpos[k]) * SV));
}

__global__ void verify_fmt(Fmt a, bool scales, unsigned long long* bad) {
  const uint32_t vw = a.vb / 4, sw = scales ? a.sb / 4 : 0, per = vw + sw;
  const uint64_t words = uint64_t(a.n) * a.L * per;
  for (uint64_t w = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; w < words; w += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t item = uint32_t(w / per), c = uint32_t(w % per);
    const uint32_t i = item / a.L, l = item % a.L;
    const uint64_t so = c < vw ? val_off(a, a.sidx[i], l) + c * 4 : scale_off(a, a.sidx[i], l) + (c - vw) * 4;
    const uint64_t dof = c < vw ? val_off(a, a.didx[i], l) + c * 4 : scale_off(a, a.didx[i], l) + (c - vw) * 4;
    if (*reinterpret_cast<const uint32_t*>(a.src + so) != *reinterpret_cast<const uint32_t*>(a.dst + dof))
      atomicAdd(bad, 1ull);
  }
}

// A streaming copy kernel (16 B per thread, 4 in flight): the bench's ceiling is torch's copy_,
// a kernel, which runs a few percent above cudaMemcpy on this device.
__global__ void __launch_bounds__(256) stream_copy(const uint4* src, uint4* dst, uint64_t n) {
  const uint64_t g0 = blockIdx.x * 1024ull + threadIdx.x;
  uint4 v[4];
#pragma unroll
  for (int u = 0; u < 4; ++u)
    if (g0 + u * 256 < n) v[u] = ld<16, 1>(reinterpret_cast<const uint8_t*>(src + g0 + u * 256));
#pragma unroll
  for (int u = 0; u < 4; ++u)
    if (g0 + u * 256 < n) st<16, 1>(reinterpret_cast<uint8_t*>(dst + g0 + u * 256), v[u]);
}

__global__ void fill_random(uint32_t* p, uint64_t words, uint32_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < words; i += uint64_t(gridDim.x) * blockDim.x) {
    uint32_t x = uint32_t(i) * 2654435761u ^ seed ^ uint32_t(i >> 32) * 40503u;
    x ^= x >> 15; x *= 2246822519u; x ^= x >> 13; x *= 3266489917u; x ^= x >> 16;
    p[i] = x;
  }
}

}  // namespace

// ---------------------------------------------------------------- host side
namespace {

constexpr size_t kPool = size_t(1536) << 20;       // device pools, as the bench's
constexpr size_t kHostPool = size_t(768) << 20;    // pinned host pool, as the bench's
constexpr size_t kPayload = size_t(256) << 20;     // bytes moved per transfer
constexpr int kReps = 15, kWarm = 3;

std::mt19937_64 rng(12345);

// n distinct ids below `limit` (partial Fisher-Yates).
std::vector<uint32_t> distinct(uint32_t n, uint32_t limit) {
  std::vector<uint32_t> all(limit);
  std::iota(all.begin(), all.end(), 0u);
  for (uint32_t i = 0; i < n; ++i) std::swap(all[i], all[i + rng() % (limit - i)]);
  all.resize(n);
  return all;
}

struct Ids {
  uint32_t* s = nullptr;
  uint32_t* d = nullptr;
  uint32_t n = 0;
};

Ids upload(const std::vector<uint32_t>& s, const std::vector<uint32_t>& d) {
  Ids ids;
  ids.n = uint32_t(s.size());
  CK(cudaMalloc(&ids.s, s.size() * 4));
  CK(cudaMalloc(&ids.d, d.size() * 4));
  CK(cudaMemcpy(ids.s, s.data(), s.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(ids.d, d.data(), d.size() * 4, cudaMemcpyHostToDevice));
  return ids;
}

void release(Ids& ids) {
  CK(cudaFree(ids.s));
  CK(cudaFree(ids.d));
}

// Pairs ordered by source id (sort=1) or by source and destination independently (sort=2:
// both sides ascending, i.e. a locality upper bound; the pairing changes, the bytes do not).
void order_pairs(std::vector<uint32_t>& s, std::vector<uint32_t>& d, int sort) {
  if (sort == 2) {
    std::sort(s.begin(), s.end());
    std::sort(d.begin(), d.end());
    return;
  }
  std::vector<uint32_t> p(s.size());
  std::iota(p.begin(), p.end(), 0u);
  std::sort(p.begin(), p.end(), [&](uint32_t a, uint32_t b) { return s[a] < s[b]; });
  std::vector<uint32_t> s2(s.size()), d2(s.size());
  for (size_t i = 0; i < p.size(); ++i) {
    s2[i] = s[p[i]];
    d2[i] = d[p[i]];
  }
  s.swap(s2);
  d.swap(d2);
}

template <typename F>
float median_ms(F launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int r = 0; r < kWarm + kReps; ++r) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= kWarm) t.push_back(ms);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

unsigned long long* g_bad = nullptr;

unsigned long long take_bad() {
  unsigned long long h = 0;
  CK(cudaMemcpy(&h, g_bad, 8, cudaMemcpyDeviceToHost));
  CK(cudaMemset(g_bad, 0, 8));
  return h;
}

// Copy ceiling of `bytes` between the pools (device: read + written counted; the faster of
// cudaMemcpy and a streaming copy kernel, as the bench's torch copy_ is a kernel).
float copy_gbs(const void* src, void* dst, size_t bytes, cudaMemcpyKind kind, bool both) {
  const float ms = median_ms([&] { CK(cudaMemcpyAsync(dst, src, bytes, kind)); });
  const float gbs = (both ? 2.0 : 1.0) * bytes / (ms * 1e6);
  if (kind != cudaMemcpyDeviceToDevice) return gbs;
  const uint64_t n = bytes / 16;
  const float kms = median_ms([&] {
    stream_copy<<<unsigned((n + 1023) / 1024), 256>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), n);
  });
  const float kgbs = 2.0 * n * 16 / (kms * 1e6);
  printf("  %-34s %-6s %8.1f GB/s  cudaMemcpy, %8.1f GB/s copy kernel\n", "(ceiling)", "copy", gbs, kgbs);
  return std::max(gbs, kgbs);
}

void print(const char* what, const char* how, float gbs, float ceil, unsigned long long bad) {
  printf("  %-34s %-6s %8.1f GB/s  %5.1f%%  %s\n", what, how, gbs, 100.0 * gbs / ceil,
         bad ? "MISMATCH" : "ok");
  fflush(stdout);
}

RowArgs row_args(const uint8_t* src, uint8_t* dst, const Ids& ids, uint32_t R, int V) {
  RowArgs a{};
  a.src = src;
  a.dst = dst;
  a.sidx = ids.s;
  a.didx = ids.d;
  a.n = ids.n;
  a.R = R;
  a.chunks = R / V;
  a.cdiv = FastDiv(a.chunks);
  a.total = a.n * a.chunks;
  return a;
}

template <int V>
void time_rows_v(const char* label, const uint8_t* src, uint8_t* dst, const Ids& ids, uint32_t R,
                 float ceil, bool sorted_only) {
  const RowArgs a = row_args(src, dst, ids, R, V);
  const double bytes = 2.0 * double(ids.n) * R;
  auto run = [&](const char* how, auto kernel, int U) {
    CK(cudaMemset(dst, 0, kPool));
    const unsigned blocks = (a.total + 256 * U - 1) / (256 * U);
    const float ms = median_ms([&] { kernel<<<blocks, 256>>>(a); });
    verify_rows<<<1024, 256>>>(src, dst, ids.s, ids.d, ids.n, R, g_bad);
    print(label, how, bytes / (ms * 1e6), ceil, take_bad());
  };
  run(sorted_only ? "T4" : "T4", rows_thread<V, 4, 1, false>, 4);
  if (sorted_only) return;
  run("T1", rows_thread<V, 1, 0, false>, 1);
  run("W4", rows_thread<V, 4, 1, true>, 4);
  run("W8", rows_thread<V, 8, 1, true>, 8);
  if (R % 16 == 0 && R <= 1024) {
    constexpr int S = 4;
    const int smem = 32 * S * R;
    CK(cudaFuncSetAttribute(rows_bulk<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0, sms = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rows_bulk<S>, 32, smem));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaMemset(dst, 0, kPool));
    const float ms = median_ms([&] { rows_bulk<S><<<per_sm * sms, 32, smem>>>(a); });
    verify_rows<<<1024, 256>>>(src, dst, ids.s, ids.d, ids.n, R, g_bad);
    print(label, "B4", bytes / (ms * 1e6), ceil, take_bad());
  }
}

void time_rows(const uint8_t* src, uint8_t* dst, uint32_t R, int sort) {
  const uint32_t limit = uint32_t(kPool / R), n = uint32_t(kPayload / R);
  std::vector<uint32_t> s = distinct(n, limit), d = distinct(n, limit);
  if (sort) order_pairs(s, d, sort);
  Ids ids = upload(s, d);
  const float ceil = copy_gbs(src, dst, size_t(n) * R, cudaMemcpyDeviceToDevice, true);
  char label[64];
  snprintf(label, sizeof label, "rows %u B%s", R, sort == 1 ? " src-sorted" : sort == 2 ? " both-sorted" : "");
  printf("  %-34s %-6s %8.1f GB/s\n", label, "copy", ceil);
  if (R % 16 == 0) time_rows_v<16>(label, src, dst, ids, R, ceil, sort != 0);
  else if (R % 8 == 0) time_rows_v<8>(label, src, dst, ids, R, ceil, sort != 0);
  else time_rows_v<4>(label, src, dst, ids, R, ceil, sort != 0);
  release(ids);
}

Fmt fmt_args(const uint8_t* src, uint8_t* dst, const Ids& ids, uint32_t vb, uint32_t sb, bool scales) {
  Fmt a{};
  a.src = src;
  a.dst = dst;
  a.sidx = ids.s;
  a.didx = ids.d;
  a.n = ids.n;
  a.L = 4;
  a.ps = 64;
  a.vb = vb;
  a.sb = sb;
  a.row = uint64_t(a.ps) * (vb + sb);
  a.page = a.L * a.row;
  a.vchunks = vb / 16;
  a.fchunks = a.vchunks + (scales && sb ? 1 : 0);
  a.total = a.n * a.L * a.fchunks;
  a.ldiv = FastDiv(a.L);
  a.psdiv = FastDiv(a.ps);
  a.fdiv = FastDiv(a.fchunks);
  a.ndiv = FastDiv(a.n);
  return a;
}

template <int SV>
float fmt_ms(const Fmt& a, bool scales) {
  const unsigned blocks = (a.total + 1023) / 1024;
  if (scales) return median_ms([&] { fmt_copy<SV, 4, true><<<blocks, 256>>>(a); });
  return median_ms([&] { fmt_copy<SV, 4, false><<<blocks, 256>>>(a); });
}

// Values + scales moved in page order (3 launches); the sorted lists come from the host.
template <int SV>
float phased_ms(const Fmt& a, const Fmt& vals, const Ids& sorted_s, const Ids& dpos, uint8_t* tmp) {
  const unsigned vblocks = (vals.total + 1023) / 1024, sblocks = (a.n * a.L + 255) / 256;
  return median_ms([&] {
    fmt_copy<SV, 4, false><<<vblocks, 256>>>(vals);
    scale_gather<SV><<<sblocks, 256>>>(a, sorted_s.s, tmp);
    scale_scatter<SV><<<sblocks, 256>>>(a, dpos.s, dpos.d, tmp);
  });
}

float sort_us(uint32_t n) {  // device radix sort of n (key, value) pairs of 32-bit ids
  uint32_t *k, *v, *k2, *v2;
  CK(cudaMalloc(&k, n * 4)); CK(cudaMalloc(&v, n * 4)); CK(cudaMalloc(&k2, n * 4)); CK(cudaMalloc(&v2, n * 4));
  fill_random<<<256, 256>>>(k, n, 7);
  CK(cudaMemset(v, 0, n * 4));
  size_t tb = 0;
  void* temp = nullptr;
  CK(cub::DeviceRadixSort::SortPairs(temp, tb, k, k2, v, v2, n));
  CK(cudaMalloc(&temp, tb));
  const float ms = median_ms([&] { CK(cub::DeviceRadixSort::SortPairs(temp, tb, k, k2, v, v2, n)); });
  CK(cudaFree(temp)); CK(cudaFree(k)); CK(cudaFree(v)); CK(cudaFree(k2)); CK(cudaFree(v2));
  return ms * 1e3f;
}

template <int SV>
void time_format(const char* name, const uint8_t* src, uint8_t* dst, uint32_t vb, uint32_t sb) {
  const uint32_t tok = vb + sb, L = 4, ps = 64;
  const uint32_t limit = uint32_t(kPool / (size_t(L) * ps * tok)) * ps;
  const uint32_t n = uint32_t(kPayload / (size_t(L) * tok));
  std::vector<uint32_t> s = distinct(n, limit), d = distinct(n, limit);
  Ids ids = upload(s, d);
  const double bytes = 2.0 * double(n) * L * tok;
  const float ceil = copy_gbs(src, dst, size_t(n) * L * tok, cudaMemcpyDeviceToDevice, true);
  printf("  %-34s %-6s %8.1f GB/s   (%u pairs x %u layers; sort of the pairs on the device: %.0f us)\n",
         name, "copy", ceil, n, L, sort_us(n));
  auto check = [&](const Fmt& a, bool scales, const char* how, float ms, double b) {
    verify_fmt<<<1024, 256>>>(a, scales, g_bad);
    print(name, how, b / (ms * 1e6), ceil, take_bad());
  };
  Fmt a = fmt_args(src, dst, ids, vb, sb, true);
  CK(cudaMemset(dst, 0, kPool));
  check(a, true, "fmt", fmt_ms<SV>(a, true), bytes);
  Fmt v = fmt_args(src, dst, ids, vb, sb, false);
  CK(cudaMemset(dst, 0, kPool));
  check(v, false, "vals", fmt_ms<SV>(v, false), 2.0 * double(n) * L * vb);
  if (!sb) return release(ids);
  // Scales in page order: source-sorted list, destination-sorted list with positions.
  std::vector<uint32_t> p(n), q(n), jpos(n), ss(n), ds(n), where(n);
  std::iota(p.begin(), p.end(), 0u);
  q = p;
  std::sort(p.begin(), p.end(), [&](uint32_t x, uint32_t y) { return s[x] < s[y]; });
  std::sort(q.begin(), q.end(), [&](uint32_t x, uint32_t y) { return d[x] < d[y]; });
  for (uint32_t j = 0; j < n; ++j) { ss[j] = s[p[j]]; where[p[j]] = j; }
  for (uint32_t k = 0; k < n; ++k) { ds[k] = d[q[k]]; jpos[k] = where[q[k]]; }
  Ids sorted_s = upload(ss, ss), dpos = upload(ds, jpos);
  uint8_t* tmp;
  CK(cudaMalloc(&tmp, size_t(n) * L * SV));
  CK(cudaMemset(dst, 0, kPool));
  check(a, true, "ph3", phased_ms<SV>(a, v, sorted_s, dpos, tmp), bytes);
  const unsigned sblocks = (n * L + 255) / 256;   // the two scale passes alone
  const float sms = median_ms([&] {
    scale_gather<SV><<<sblocks, 256>>>(a, sorted_s.s, tmp);
    scale_scatter<SV><<<sblocks, 256>>>(a, dpos.s, dpos.d, tmp);
  });
  printf("  %-34s %-6s %8.0f us for the scales in page order (%.1f MB of scales)\n", name, "ph3sc",
         sms * 1e3, double(n) * L * sb / 1e6);
  release(sorted_s); release(dpos); CK(cudaFree(tmp));
  // Values with the pairs sorted by source id (locality of the reads).
  order_pairs(s, d, 1);
  Ids sorted = upload(s, d);
  Fmt w = fmt_args(src, dst, sorted, vb, sb, true);
  CK(cudaMemset(dst, 0, kPool));
  check(w, true, "fmtsrt", fmt_ms<SV>(w, true), bytes);
  release(sorted);
  release(ids);
}

// Host pools: zero copy of values + scales and of values only, and a 2D DMA of the host pool's
// scale blocks (what staging only the scales would add to the link).
template <int SV>
void time_host(const char* name, uint8_t* dev, uint8_t* host, uint32_t vb, uint32_t sb) {
  const uint32_t tok = vb + sb, L = 4, ps = 64;
  const uint32_t hpages = uint32_t(kHostPool / (size_t(L) * ps * tok)), dpages = uint32_t(kPool / (size_t(L) * ps * tok));
  const uint32_t n = uint32_t((size_t(128) << 20) / (size_t(L) * tok));
  for (int h2d = 0; h2d < 2; ++h2d) {
    std::vector<uint32_t> hs = distinct(n, hpages * ps), ds = distinct(n, dpages * ps);
    Ids ids = h2d ? upload(hs, ds) : upload(ds, hs);
    const uint8_t* src = h2d ? host : dev;
    uint8_t* dst = h2d ? dev : host;
    // Fresh random source bytes, cleared destination (never time or check on zeros).
    fill_random<<<4096, 256>>>(reinterpret_cast<uint32_t*>(dev), kPool / 4, 3 + h2d);
    CK(cudaDeviceSynchronize());
    if (h2d) CK(cudaMemcpy(host, dev, kHostPool, cudaMemcpyDeviceToHost));
    const size_t bytes = size_t(n) * L * tok;
    const float ceil = copy_gbs(src, dst, bytes, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, false);
    char label[64];
    snprintf(label, sizeof label, "%s %s rand", name, h2d ? "h2d" : "d2h");
    printf("  %-34s %-6s %8.1f GB/s\n", label, "pinned", ceil);
    Fmt a = fmt_args(src, dst, ids, vb, sb, true), v = fmt_args(src, dst, ids, vb, sb, false);
    if (h2d) CK(cudaMemset(dst, 0, kPool));
    else std::memset(dst, 0, kHostPool);
    float ms = fmt_ms<SV>(a, true);
    verify_fmt<<<1024, 256>>>(a, true, g_bad);
    print(label, "fmt", bytes / (ms * 1e6), ceil, take_bad());
    if (sb) {
      if (h2d) CK(cudaMemset(dst, 0, kPool));
      else std::memset(dst, 0, kHostPool);
      ms = fmt_ms<SV>(v, false);
      verify_fmt<<<1024, 256>>>(v, false, g_bad);
      print(label, "vals", double(n) * L * vb / (ms * 1e6), ceil, take_bad());
      // The host pool's scale blocks, all pages (random ids touch nearly every page).
      const size_t pitch = size_t(ps) * tok, width = size_t(ps) * sb, rows = size_t(hpages) * L;
      uint8_t* stage;
      CK(cudaMalloc(&stage, width * rows));
      const uint8_t* hsc = host + size_t(ps) * vb;
      const float dms = median_ms([&] {
        if (h2d) CK(cudaMemcpy2DAsync(stage, width, hsc, pitch, width, rows, cudaMemcpyHostToDevice));
        else CK(cudaMemcpy2DAsync(const_cast<uint8_t*>(hsc), pitch, stage, width, width, rows, cudaMemcpyDeviceToHost));
      });
      printf("  %-34s %-6s %8.1f GB/s  2D DMA of all %zu host scale blocks (%.1f MB): %.0f us; "
             "vals + that = %.1f%% of pinned\n", label, "sDMA", width * rows / (dms * 1e6), rows,
             width * rows / 1e6, dms * 1e3, 100.0 * bytes / ((ms + dms) * 1e6) / ceil);
      CK(cudaFree(stage));
    }
    release(ids);
  }
}

}  // namespace

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("rowprobe on %s: %d SMs, L2 %d MB; pools %zu MiB, payload %zu MiB per transfer, median of %d\n",
         prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, kPool >> 20, kPayload >> 20, kReps);
  uint8_t *src, *dst, *host;
  CK(cudaMalloc(&src, kPool));
  CK(cudaMalloc(&dst, kPool));
  CK(cudaMalloc(&g_bad, 8));
  CK(cudaMemset(g_bad, 0, 8));
  CK(cudaHostAlloc(&host, kHostPool, cudaHostAllocMapped));
  fill_random<<<4096, 256>>>(reinterpret_cast<uint32_t*>(src), kPool / 4, 1);
  CK(cudaMemcpy(host, src, kHostPool, cudaMemcpyDeviceToHost));
  CK(cudaDeviceSynchronize());
  const bool rows = argc < 2 || std::string(argv[1]).find("rows") != std::string::npos;
  const bool fmts = argc < 2 || std::string(argv[1]).find("fmt") != std::string::npos;
  const bool hosts = argc < 2 || std::string(argv[1]).find("host") != std::string::npos;
  if (rows) {
    printf("random packed rows, device to device (GB/s read + written; %% of the copy):\n");
    for (uint32_t R : {128u, 132u, 256u, 512u, 576u, 584u, 1024u, 4096u}) time_rows(src, dst, R, 0);
    for (uint32_t R : {128u, 256u, 576u}) time_rows(src, dst, R, 1);
    for (uint32_t R : {128u, 256u}) time_rows(src, dst, R, 2);
  }
  if (fmts) {
    printf("page formats, random token ids both sides, device to device:\n");
    time_format<4>("bf16 256", src, dst, 256, 0);
    time_format<8>("c4 576+8", src, dst, 576, 8);
    time_format<4>("fp8 128+4", src, dst, 128, 4);
  }
  if (hosts) {
    printf("page formats, random token ids, host zero copy (GB/s payload):\n");
    time_host<4>("bf16 256", dst, host, 256, 0);
    time_host<8>("c4 576+8", dst, host, 576, 8);
    time_host<4>("fp8 128+4", dst, host, 128, 4);
  }
  CK(cudaDeviceSynchronize());
  printf("rowprobe done\n");
  return 0;
}
