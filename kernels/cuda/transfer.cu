// The index-K transfer kernel: copies per-token (or per-page) segments of every layer between
// pools, 16 bytes per thread where alignment allows, in one launch per transfer.
//
// Work is flattened into chunks of V bytes: chunk g of a segment kind belongs to item
// g / chunks (item = layer * n + pair: layer-major, so consecutive ids of one layer sit next to
// each other) and is chunk g % chunks of that item's segment. Divisions use precomputed
// multiply-shift divisors: 64-bit division would cost more issue slots than the copy.
#include "transfer.cuh"

#include <algorithm>

namespace wb {
namespace {

// Unsigned 32-bit division by a run-time constant (valid for dividends < 2^31).
struct FastDiv {
  uint32_t d = 1, m = 0, s = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t div) : d(div) {
    for (s = 0; s < 32; ++s)
      if ((1u << s) >= div) break;
    uint64_t one = 1;
    m = static_cast<uint32_t>(((one << 32) * ((one << s) - div)) / div + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return (__umulhi(n, m) + n) >> s;
  }
};

struct Seg {
  int64_t base = 0, stride = 0;  // slot s of a row starts at base + s * stride
  uint32_t chunks = 0;           // chunks of V bytes per item
  FastDiv cdiv;
  uint32_t total = 0;            // chunks over all items
};

struct KArgs {
  const uint8_t* src;
  uint8_t* dst;
  const int64_t* sidx;
  const int64_t* didx;
  uint32_t n;
  FastDiv ndiv, psdiv;
  bool token;
  // Per side: a compact scale pool (TransferArgs::src_compact/dst_compact) has shorter rows.
  int64_t s_page_stride, d_page_stride, s_layer_stride, d_layer_stride;
  int64_t s_total, d_total;
  Seg seg[2];
  // Fused form (variants 9-16): both segment kinds in one chunk space, fchunks per item.
  uint32_t L;                    // layers per pair in the item space (1 for page_first pages)
  FastDiv ldiv;
  FastDiv tdiv;                  // 32 * L: items per tile of 32 pairs (ORDER 2)
  uint32_t fchunks;
  FastDiv fdiv;
  uint32_t ftotal;
  // Split form (variants 17-19): the first sblocks blocks copy the scale chunks, one per
  // thread, the others the value chunks.
  uint32_t sblocks;
  // Device-side checks (TransferArgs::check); ids of this launch start at idx_base.
  bool check;
  bool report;                   // with check: stamp and report (else only skip bad ids)
  uint64_t s_lim, d_lim;
  unsigned* stamp;
  unsigned gen;
  uint32_t copy_blocks;          // blocks that copy (the grid-stride variants' stride)
  uint32_t stamp_blocks;         // blocks before them that check the ids (checked launches)
  int32_t* claim;
  ErrorRecord* err;
  int64_t seq, idx_base;
  const int32_t* gate;           // TransferArgs::gate: skip the launch unless *gate == gate_want
  int32_t gate_want;
};

// First bad index of a checked launch: one thread wins the claim and fills the host record.
__device__ __forceinline__ void report(const KArgs& a, int code, uint32_t i, int64_t value) {
  if (atomicCAS(a.claim, 0, 1) != 0) return;
  volatile ErrorRecord* r = a.err;
  r->code = code;
  r->seq = a.seq;
  r->index = a.idx_base + i;
  r->value = value;
  __threadfence_system();
  r->ready = 1;
}

// This block's number among the copy blocks (the stamp blocks come first).
__device__ __forceinline__ uint32_t copy_block(const KArgs& a) { return blockIdx.x - a.stamp_blocks; }

// The ids of pair i. With checks on, false when either is out of range: the chunk is skipped
// (no access outside the pools); the stamp blocks report it.
__device__ __forceinline__ bool pair_ids(const KArgs& a, uint32_t i, int64_t& st, int64_t& dt) {
  st = __ldg(a.sidx + i);
  dt = __ldg(a.didx + i);
  return !a.check || (uint64_t(st) < a.s_lim && uint64_t(dt) < a.d_lim);
}

// The checks' reports, in blocks of their own before the copy blocks (blockIdx.x <
// stamp_blocks: dispatched first, they finish under the copy instead of lengthening its tail),
// so no copying warp waits for an atomic's round trip or carries the reporting code: each
// thread takes one pair, reports an id out of range, and stamps the destination id with this
// launch's generation; finding the generation there already means another pair named it.
// Returns true in those blocks (the caller returns).
// A gated launch whose path was not chosen (TransferArgs::gate) returns true in every block.
__device__ __forceinline__ bool stamp_block(const KArgs& a) {
  if (a.gate != nullptr && *a.gate != a.gate_want) return true;
  if (blockIdx.x >= a.stamp_blocks) return false;
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < a.n) {
    const int64_t st = __ldg(a.sidx + j), dt = __ldg(a.didx + j);
    if (uint64_t(st) >= a.s_lim) report(a, 1, j, st);
    else if (uint64_t(dt) >= a.d_lim) report(a, 2, j, dt);
    else if (atomicExch(a.stamp + dt, a.gen) == a.gen) report(a, 3, j, dt);
  }
  return true;
}

// Chunk u of this thread's group starting at `base` (the block's first chunk): blockDim apart,
// or with WARP a warp's U x 32 chunks consecutive (whole rows per warp, every load of the
// group issued before any store).
template <int U, bool WARP>
__device__ __forceinline__ uint32_t chunk_at(uint32_t base, int u) {
  if constexpr (WARP) return base + (threadIdx.x >> 5) * 32u * U + u * 32u + (threadIdx.x & 31);
  return base + u * blockDim.x + threadIdx.x;
}

struct alignas(32) U32B {
  uint4 a, b;
};
struct alignas(64) U64B {
  uint4 a, b, c, d;
};
template <int V> struct VecT;
template <> struct VecT<64> { using T = U64B; };
template <> struct VecT<32> { using T = U32B; };
template <> struct VecT<16> { using T = uint4; };
template <> struct VecT<8> { using T = uint2; };
template <> struct VecT<4> { using T = uint32_t; };
template <> struct VecT<1> { using T = uint8_t; };

// HINTS 0: plain; 1: streaming (evict-first) loads and stores; 2: non-coherent loads that
// prefetch the whole 256-byte L2 line, streaming stores; 3: non-coherent loads that skip L1
// (no L2 prefetch), streaming stores.
template <int V, int HINTS>
__device__ __forceinline__ typename VecT<V>::T load(const uint8_t* p) {
  using T = typename VecT<V>::T;
  if constexpr (V == 64) {
    U64B r;
    r.a = load<16, HINTS>(p);
    r.b = load<16, HINTS>(p + 16);
    r.c = load<16, HINTS>(p + 32);
    r.d = load<16, HINTS>(p + 48);
    return r;
  } else if constexpr (V == 32) {  // two 16-byte accesses per thread: half the index math per byte
    U32B r;
    r.a = load<16, HINTS>(p);
    r.b = load<16, HINTS>(p + 16);
    return r;
  } else if constexpr (HINTS == 1 && V == 16) {
    return __ldcs(reinterpret_cast<const T*>(p));
  } else if constexpr (HINTS == 2 && V == 16) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
  } else if constexpr (HINTS == 3 && V == 16) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
  } else {
    return *reinterpret_cast<const T*>(p);
  }
}

template <int V, int HINTS>
__device__ __forceinline__ void store(uint8_t* p, typename VecT<V>::T v) {
  using T = typename VecT<V>::T;
  if constexpr (V == 64) {
    store<16, HINTS>(p, v.a);
    store<16, HINTS>(p + 16, v.b);
    store<16, HINTS>(p + 32, v.c);
    store<16, HINTS>(p + 48, v.d);
  } else if constexpr (V == 32) {
    store<16, HINTS>(p, v.a);
    store<16, HINTS>(p + 16, v.b);
  } else if constexpr (HINTS >= 1 && V == 16) {
    __stcs(reinterpret_cast<T*>(p), v);
  } else {
    *reinterpret_cast<T*>(p) = v;
  }
}

template <int V, int U, bool CLIP, int HINTS, bool WARP = false>
__device__ __forceinline__ void copy_seg(const KArgs& a, const Seg& s) {
  using T = typename VecT<V>::T;
  const uint32_t step = a.copy_blocks * blockDim.x * U;
  for (uint32_t b0 = copy_block(a) * blockDim.x * U; b0 < s.total; b0 += step) {
    T v[U];
    int64_t doff[U];
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint32_t g = chunk_at<U, WARP>(b0, u);
      ok[u] = g < s.total;
      if (ok[u]) {
        const uint32_t item = s.cdiv.div(g);
        const uint32_t c = g - item * s.chunks;
        const uint32_t l = a.ndiv.div(item);
        const uint32_t i = item - l * a.n;
        int64_t st, dt;
        ok[u] = pair_ids(a, i, st, dt);
        if (!ok[u]) continue;
        int64_t sp = st, ss = 0, dp = dt, ds = 0;
        if (a.token) {
          const uint32_t sq = a.psdiv.div(static_cast<uint32_t>(st));
          const uint32_t dq = a.psdiv.div(static_cast<uint32_t>(dt));
          ss = st - static_cast<int64_t>(sq) * a.psdiv.d;
          ds = dt - static_cast<int64_t>(dq) * a.psdiv.d;
          sp = sq;
          dp = dq;
        }
        const int64_t tail = s.base + static_cast<int64_t>(c) * V;
        const int64_t soff = sp * a.s_page_stride + l * a.s_layer_stride + ss * s.stride + tail;
        doff[u] = dp * a.d_page_stride + l * a.d_layer_stride + ds * s.stride + tail;
        if (CLIP) ok[u] = soff + V <= a.s_total && doff[u] + V <= a.d_total;
        if (ok[u]) v[u] = load<V, HINTS>(a.src + soff);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (ok[u]) store<V, HINTS>(a.dst + doff[u], v[u]);
  }
}

// Values and scales of an item in one chunk space (chunk c < seg[0].chunks: a V0 value chunk,
// else a V1 scale chunk), so the scale reads (one 32 B sector per 4-8 B) overlap the value
// stream instead of running as a latency-bound second pass. ORDER 0: layer-major items,
// 1: pair-major (item = pair * L + layer: the layers of one pair together), 2: tiles of 32
// pairs, layer-major inside a tile (a block's pairs keep their layers together, as pair-major,
// while consecutive threads take consecutive pairs of one layer, as layer-major: consecutive
// host ids stay one write stream through the link). Scale stores stay plain
// (write-back) so the partial sectors of neighbouring slots merge in L2 before eviction.
template <int V0, int V1, int U, int HINTS, int ORDER, bool WARP = false>
__device__ __forceinline__ void copy_fused(const KArgs& a) {
  using T0 = typename VecT<V0>::T;
  using T1 = typename VecT<(V1 > 0 ? V1 : 1)>::T;
  const Seg& s0 = a.seg[0];
  const Seg& s1 = a.seg[1];
  const uint32_t total = a.ftotal, c0 = s0.chunks;
  const uint32_t step = a.copy_blocks * blockDim.x * U;
  for (uint32_t b0 = copy_block(a) * blockDim.x * U; b0 < total; b0 += step) {
    T0 v[U];
    T1 w[U];
    int64_t doff[U];
    bool ok[U], sc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint32_t g = chunk_at<U, WARP>(b0, u);
      ok[u] = g < total;
      sc[u] = false;
      if (ok[u]) {
        const uint32_t item = a.fdiv.div(g);
        const uint32_t c = g - item * a.fchunks;
        uint32_t l, i;
        if constexpr (ORDER == 1) {
          i = a.ldiv.div(item);
          l = item - i * a.L;
        } else if constexpr (ORDER == 2) {
          const uint32_t t = a.tdiv.div(item), r = item - t * a.tdiv.d;
          l = r >> 5;
          i = t * 32u + (r & 31u);
          if (i >= a.n) {  // the last tile's padding
            ok[u] = false;
            continue;
          }
        } else {
          l = a.ndiv.div(item);
          i = item - l * a.n;
        }
        int64_t st, dt;
        ok[u] = pair_ids(a, i, st, dt);
        if (!ok[u]) continue;
        int64_t sp = st, ss = 0, dp = dt, ds = 0;
        if (a.token) {
          const uint32_t sq = a.psdiv.div(static_cast<uint32_t>(st));
          const uint32_t dq = a.psdiv.div(static_cast<uint32_t>(dt));
          ss = st - static_cast<int64_t>(sq) * a.psdiv.d;
          ds = dt - static_cast<int64_t>(dq) * a.psdiv.d;
          sp = sq;
          dp = dq;
        }
        int64_t tail = s0.base + static_cast<int64_t>(c) * V0, stride = s0.stride;
        if constexpr (V1 > 0) {
          if (c >= c0) {
            sc[u] = true;
            tail = s1.base + static_cast<int64_t>(c - c0) * V1;
            stride = s1.stride;
          }
        }
        const int64_t soff = sp * a.s_page_stride + l * a.s_layer_stride + ss * stride + tail;
        doff[u] = dp * a.d_page_stride + l * a.d_layer_stride + ds * stride + tail;
        if constexpr (V1 > 0) {
          if (sc[u]) w[u] = load<(V1 > 0 ? V1 : 1), 0>(a.src + soff);
          else v[u] = load<V0, HINTS>(a.src + soff);
        } else {
          v[u] = load<V0, HINTS>(a.src + soff);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!ok[u]) continue;
      if constexpr (V1 > 0) {
        if (sc[u]) {
          store<(V1 > 0 ? V1 : 1), 0>(a.dst + doff[u], w[u]);
          continue;
        }
      }
      store<V0, HINTS>(a.dst + doff[u], v[u]);
    }
  }
}

// Token rows without a scale block (variant 24): the random-row probe's gather (NOTES run 7)
// in the kernel's frame: 16 B chunks, pair-major, index arithmetic in 32 bits (pages, slots,
// layers) widened once per offset, so the loads issue after a short dependent chain.
template <int U>
__global__ void __launch_bounds__(256) lean_kernel(const __grid_constant__ KArgs a) {
  if (stamp_block(a)) return;
  const uint32_t c0 = a.seg[0].chunks;
  const uint64_t row = static_cast<uint64_t>(a.seg[0].stride);
  uint4 v[U];
  uint64_t doff[U];
  bool ok[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const uint32_t g = copy_block(a) * 256u * U + u * 256u + threadIdx.x;
    ok[u] = g < a.ftotal;
    if (!ok[u]) continue;
    const uint32_t item = a.fdiv.div(g), c = g - item * c0;
    const uint32_t i = a.ldiv.div(item), l = item - i * a.L;
    int64_t st, dt;
    ok[u] = pair_ids(a, i, st, dt);
    if (!ok[u]) continue;
    const uint32_t s32 = static_cast<uint32_t>(st), d32 = static_cast<uint32_t>(dt);
    const uint32_t sp = a.psdiv.div(s32), dp = a.psdiv.div(d32);
    const uint32_t ss = s32 - sp * a.psdiv.d, ds = d32 - dp * a.psdiv.d;
    const uint64_t soff = uint64_t(sp) * uint64_t(a.s_page_stride) +
                          uint64_t(l) * uint64_t(a.s_layer_stride) + uint64_t(ss) * row + c * 16u;
    doff[u] = uint64_t(dp) * uint64_t(a.d_page_stride) + uint64_t(l) * uint64_t(a.d_layer_stride) +
              uint64_t(ds) * row + c * 16u;
    v[u] = load<16, 3>(a.src + soff);
  }
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (ok[u]) store<16, 3>(a.dst + doff[u], v[u]);
}

// Byte offsets of a chunk at `tail` bytes into the segment of slot stride `stride`.
__device__ __forceinline__ void chunk_offsets(const KArgs& a, uint32_t l, int64_t st, int64_t dt,
                                              int64_t stride, int64_t tail, int64_t& soff,
                                              int64_t& doff) {
  int64_t sp = st, ss = 0, dp = dt, ds = 0;
  if (a.token) {
    const uint32_t sq = a.psdiv.div(static_cast<uint32_t>(st));
    const uint32_t dq = a.psdiv.div(static_cast<uint32_t>(dt));
    ss = st - static_cast<int64_t>(sq) * a.psdiv.d;
    ds = dt - static_cast<int64_t>(dq) * a.psdiv.d;
    sp = sq;
    dp = dq;
  }
  soff = sp * a.s_page_stride + l * a.s_layer_stride + ss * stride + tail;
  doff = dp * a.d_page_stride + l * a.d_layer_stride + ds * stride + tail;
}

// Scales first (variants 17-19): blocks [0, sblocks) copy one scale chunk per thread,
// layer-major with plain loads and stores, so the 32 B sectors that neighbouring slots share
// are read once and merged in L2 while one layer's scale blocks are resident (random ids touch
// a sector several times per call, far apart in the value stream); the blocks after them copy
// the value chunks, U per thread, in `PAIR` item order, with `HINTS`.
template <int V0, int V1, int U, int HINTS, bool PAIR>
__global__ void __launch_bounds__(256) split_kernel(const __grid_constant__ KArgs a) {
  using T0 = typename VecT<V0>::T;
  if (stamp_block(a)) return;
  const Seg& s0 = a.seg[0];
  if constexpr (V1 > 0) {
    if (copy_block(a) < a.sblocks) {
      const Seg& s1 = a.seg[1];
      const uint32_t g = copy_block(a) * blockDim.x + threadIdx.x;
      if (g >= s1.total) return;
      const uint32_t item = s1.cdiv.div(g);
      const uint32_t c = g - item * s1.chunks;
      const uint32_t l = a.ndiv.div(item);
      const uint32_t i = item - l * a.n;
      int64_t st, dt, soff, doff;
      if (!pair_ids(a, i, st, dt)) return;
      chunk_offsets(a, l, st, dt, s1.stride, s1.base + static_cast<int64_t>(c) * V1, soff, doff);
      store<V1, 0>(a.dst + doff, load<V1, 0>(a.src + soff));
      return;
    }
  }
  const uint32_t g0 = (copy_block(a) - a.sblocks) * blockDim.x * U + threadIdx.x;
  T0 v[U];
  int64_t doff[U];
  bool ok[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const uint32_t g = g0 + u * blockDim.x;
    ok[u] = g < s0.total;
    if (!ok[u]) continue;
    const uint32_t item = s0.cdiv.div(g);
    const uint32_t c = g - item * s0.chunks;
    uint32_t l, i;
    if constexpr (PAIR) {
      i = a.ldiv.div(item);
      l = item - i * a.L;
    } else {
      l = a.ndiv.div(item);
      i = item - l * a.n;
    }
    int64_t st, dt, soff;
    ok[u] = pair_ids(a, i, st, dt);
    if (!ok[u]) continue;
    chunk_offsets(a, l, st, dt, s0.stride, s0.base + static_cast<int64_t>(c) * V0, soff, doff[u]);
    v[u] = load<V0, HINTS>(a.src + soff);
  }
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (ok[u]) store<V0, HINTS>(a.dst + doff[u], v[u]);
}

template <int V0, int V1, int U, int HINTS, int ORDER, bool WARP>
__global__ void __launch_bounds__(256) fused_kernel(const __grid_constant__ KArgs a) {
  if (stamp_block(a)) return;
  copy_fused<V0, V1, U, HINTS, ORDER, WARP>(a);
}

// One launch moves both segment kinds (values, then scales) of every item.
template <int V0, int V1, int U, bool CLIP, int HINTS, bool WARP>
__global__ void __launch_bounds__(256) transfer_kernel(const __grid_constant__ KArgs a) {
  if (stamp_block(a)) return;
  copy_seg<V0, U, CLIP, HINTS, WARP>(a, a.seg[0]);
  if constexpr (V1 > 0) copy_seg<V1, U, CLIP, HINTS, WARP>(a, a.seg[1]);
}

struct Variant {
  const char* name;
};
constexpr Variant kVariants[] = {
    {"plain: 1 chunk/thread, full grid"},
    {"unroll4: 4 chunks/thread in flight, one resident wave, grid-stride"},
    {"unroll4+stream: as 1 with evict-first loads and stores"},
    {"unroll4+l2pf: as 1 with nc loads prefetching 256B L2 lines, evict-first stores"},
    {"wide32x2: 32 B per thread (two 16 B accesses), 2 in flight, evict-first"},
    {"wide32x4: 32 B per thread, 4 in flight, evict-first"},
    {"wide32x8: 32 B per thread, 8 in flight, evict-first"},
    {"wide64x2: 64 B per thread (four 16 B accesses), 2 in flight, evict-first"},
    {"wide32x4+l2pf: as 5 with nc loads prefetching 256B L2 lines"},
    {"fused: values and scales in one chunk space, 16 B, 4 in flight, nc no-L1 loads, evict-first value stores, one resident wave"},
    {"fused32: as 9 with 32 B value chunks where aligned (device to device)"},
    {"fused32+pair: as 10 with the layers of one pair adjacent (pair-major items)"},
    {"fused32+waves: as 10 over a full grid (several waves, no grid-stride)"},
    {"fused+plain+waves: as 9 with plain loads and stores, over a full grid"},
    {"fused+plain: as 9 with plain loads and stores"},
    {"fused32+stream+waves: as 12 with evict-first (not nc) loads"},
    {"fused32+pair+waves: as 11 over a full grid"},
    {"split32: scale chunks first (plain, layer-major, L2-merged), then 32 B values (nc loads, evict-first stores), full grid"},
    {"split32+pair: as 17 with the values pair-major"},
    {"split+plain: as 17 with 16 B plain value loads and stores"},
    {"fused16+pair+waves: as 16 with 16 B value chunks"},
    {"fused16+pair+waves+warp: as 20 with a warp's 4 x 32 chunks consecutive (whole rows per warp)"},
    {"twopass+warp: values then scales, a warp's 4 x 32 chunks consecutive, nc loads, evict-first stores, full grid"},
    {"fused32+tile32+waves: as 12 over tiles of 32 pairs, layer-major inside a tile"},
    {"lean: token rows without scales, 16 B, pair-major, 32-bit index math, full grid (else as 23)"},
};
constexpr int kNumVariants = sizeof(kVariants) / sizeof(kVariants[0]);
// Defaults per direction (d2d, d2h, h2d), chosen from the H200 measurements in NOTES.md;
// device to device is refined per shape of work in transfer_launch.
constexpr int kDefault[3] = {5, 1, 0};

int64_t gcd64(int64_t a, int64_t b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int widest(int64_t align, const int* options, int count) {
  for (int k = 0; k < count; ++k)
    if (align % options[k] == 0) return options[k];
  return 1;
}

// (Checked launches) one stamp thread per pair, then `blocks` copy blocks.
template <typename Kernel>
cudaError_t launch_blocks(Kernel kernel, const KArgs& k, int64_t blocks, cudaStream_t stream) {
  KArgs kk = k;
  kk.copy_blocks = static_cast<uint32_t>(blocks);
  kk.stamp_blocks = k.check && k.report ? (k.n + 255) / 256 : 0;
  kernel<<<unsigned(blocks + kk.stamp_blocks), 256, 0, stream>>>(kk);
  return cudaGetLastError();
}

// Launch `kernel` with 256 threads per block. When capped, the grid is at most one resident wave
// (occupancy-derived; the kernels grid-stride over the rest), else one chunk per thread.
// `resident` caches the occupancy of this kernel: the device does not change under us.
template <typename Kernel>
cudaError_t launch_grid(Kernel kernel, int& resident, const KArgs& k, int64_t blocks, int num_sms,
                        bool capped, cudaStream_t stream) {
  if (capped) {
    if (resident == 0) {
      int per_sm = 0;
      cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, 0);
      if (e != cudaSuccess) return e;
      resident = std::max(per_sm, 1);
    }
    blocks = std::min<int64_t>(blocks, int64_t(resident) * std::max(num_sms, 1));
  }
  return launch_blocks(kernel, k, std::max<int64_t>(blocks, 1), stream);
}

template <int V0, int V1, int U, bool CLIP, int HINTS, bool WARP = false>
cudaError_t launch_one(const KArgs& k, int64_t blocks, int num_sms, bool capped,
                       cudaStream_t stream) {
  static int resident = 0;  // one per instantiation
  return launch_grid(transfer_kernel<V0, V1, U, CLIP, HINTS, WARP>, resident, k, blocks, num_sms, capped, stream);
}

// The fused kernel, over one resident wave (grid-stride) when capped, else a full grid.
template <int V0, int V1, int U, int HINTS, int ORDER, bool WARP = false>
cudaError_t launch_fused(const KArgs& k, int64_t blocks, int num_sms, bool capped,
                         cudaStream_t stream) {
  static int resident = 0;  // one per instantiation
  return launch_grid(fused_kernel<V0, V1, U, HINTS, ORDER, WARP>, resident, k, blocks, num_sms, capped, stream);
}

inline int64_t blocks_for(int64_t most, int unroll) { return (most + 256 * unroll - 1) / (256 * unroll); }

// The fused kernel over tiles of 32 pairs (ORDER 2): the item space is padded to whole tiles.
template <int V0, int V1>
cudaError_t launch_tiled(const KArgs& k, int num_sms, cudaStream_t stream) {
  KArgs kt = k;
  kt.tdiv = FastDiv(32u * k.L);
  kt.ftotal = (k.n + 31u) / 32u * 32u * k.L * k.fchunks;
  return launch_fused<V0, V1, 4, 3, 2>(kt, blocks_for(kt.ftotal, 4), num_sms, false, stream);
}

// Scale blocks first, then the value blocks: a full grid.
template <int V0, int V1, int U, int HINTS, bool PAIR>
cudaError_t launch_split(const KArgs& k, cudaStream_t stream) {
  const int64_t blocks = int64_t(k.sblocks) + (int64_t(k.seg[0].total) + 256 * U - 1) / (256 * U);
  return launch_blocks(split_kernel<V0, V1, U, HINTS, PAIR>, k, std::max<int64_t>(blocks, 1), stream);
}

struct Launch {
  int64_t most;  // chunks of the larger segment kind
  int num_sms;
  int variant;
  bool clip;
};

template <int V0, int V1>
cudaError_t launch_v(const KArgs& k, const Launch& l, cudaStream_t stream) {
  if (l.clip) return launch_one<V0, V1, 4, true, 0>(k, blocks_for(l.most, 4), l.num_sms, true, stream);
  if constexpr (V0 == 16 || V0 == 32) {
    const int64_t f = k.ftotal;
    switch (l.variant) {
      case 9:
      case 10: return launch_fused<V0, V1, 4, 3, false>(k, blocks_for(f, 4), l.num_sms, true, stream);
      case 11: return launch_fused<V0, V1, 4, 3, true>(k, blocks_for(f, 4), l.num_sms, true, stream);
      case 12: return launch_fused<V0, V1, 4, 3, false>(k, blocks_for(f, 4), l.num_sms, false, stream);
      case 13: return launch_fused<V0, V1, 4, 0, false>(k, blocks_for(f, 4), l.num_sms, false, stream);
      case 14: return launch_fused<V0, V1, 4, 0, false>(k, blocks_for(f, 4), l.num_sms, true, stream);
      case 15: return launch_fused<V0, V1, 4, 1, false>(k, blocks_for(f, 4), l.num_sms, false, stream);
      case 16: return launch_fused<V0, V1, 4, 3, true>(k, blocks_for(f, 4), l.num_sms, false, stream);
      case 17: return launch_split<V0, V1, 4, 3, false>(k, stream);
      case 18: return launch_split<V0, V1, 4, 3, true>(k, stream);
      case 19: return launch_split<V0, V1, 4, 0, false>(k, stream);
      case 20: return launch_fused<V0, V1, 4, 3, true>(k, blocks_for(f, 4), l.num_sms, false, stream);
      case 21: return launch_fused<V0, V1, 4, 3, true, true>(k, blocks_for(f, 4), l.num_sms, false, stream);
      case 22: return launch_one<V0, V1, 4, false, 3, true>(k, blocks_for(l.most, 4), l.num_sms, false, stream);
      case 23: return launch_tiled<V0, V1>(k, l.num_sms, stream);
      case 24:
        if constexpr (V0 == 16 && V1 == 0)
          if (k.token) return launch_blocks(lean_kernel<4>, k, std::max<int64_t>(blocks_for(f, 4), 1), stream);
        return launch_tiled<V0, V1>(k, l.num_sms, stream);
      default: break;
    }
  }
  if constexpr (V0 == 64) {
    return launch_one<V0, V1, 2, false, 1>(k, blocks_for(l.most, 2), l.num_sms, true, stream);
  } else if constexpr (V0 == 32) {
    if (l.variant == 4)
      return launch_one<V0, V1, 2, false, 1>(k, blocks_for(l.most, 2), l.num_sms, true, stream);
    if (l.variant == 6)
      return launch_one<V0, V1, 8, false, 1>(k, blocks_for(l.most, 8), l.num_sms, true, stream);
    if (l.variant == 8)
      return launch_one<V0, V1, 4, false, 2>(k, blocks_for(l.most, 4), l.num_sms, true, stream);
    return launch_one<V0, V1, 4, false, 1>(k, blocks_for(l.most, 4), l.num_sms, true, stream);
  }
  if constexpr (V0 == 16) {
    switch (l.variant) {
      case 0: return launch_one<V0, V1, 1, false, 0>(k, blocks_for(l.most, 1), l.num_sms, false, stream);
      case 2: return launch_one<V0, V1, 4, false, 1>(k, blocks_for(l.most, 4), l.num_sms, true, stream);
      case 3: return launch_one<V0, V1, 4, false, 2>(k, blocks_for(l.most, 4), l.num_sms, true, stream);
      default: break;
    }
  }
  return launch_one<V0, V1, 4, false, 0>(k, blocks_for(l.most, 4), l.num_sms, true, stream);
}

template <int V0>
cudaError_t launch_v1(const KArgs& k, int v1, const Launch& l, cudaStream_t stream) {
  switch (v1) {
    case 0: return launch_v<V0, 0>(k, l, stream);
    case 8: return launch_v<V0, 8>(k, l, stream);
    case 4: return launch_v<V0, 4>(k, l, stream);
    default: return launch_v<V0, 1>(k, l, stream);
  }
}

}  // namespace

namespace {

// Every thread writes its page's own number: racing writes of one page store the same value.
__global__ void __launch_bounds__(256) mark_pages_kernel(const int64_t* ids, int64_t n,
                                                         int64_t page_size, int64_t limit,
                                                         int64_t pages, int64_t* out) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t id = ids[i];
    if (id >= 0 && id < limit) {
      const int64_t page = id / page_size;
      if (page < pages) out[page] = page;
    }
  }
}

// Marks as mark_pages_kernel, counting the pages marked first and the runs of one page (per
// warp, one atomic each); the last block to finish writes the path (ChooseArgs).
__global__ void __launch_bounds__(256) choose_path_kernel(const int64_t* ids, int64_t n,
                                                          int64_t page_size, int64_t limit,
                                                          int64_t pages, int64_t* out,
                                                          int32_t* stats, ChooseArgs c) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  int touched = 0, runs = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t id = ids[i];
    if (id < 0 || id >= limit) continue;
    const int64_t page = id / page_size;
    if (page >= pages) continue;
    if (out[page] == -1 &&
        atomicCAS(reinterpret_cast<unsigned long long*>(out + page), ~0ull,
                  static_cast<unsigned long long>(page)) == ~0ull)
      ++touched;
    const int64_t prev = i > 0 ? ids[i - 1] : -1;
    if (i == 0 || prev < 0 || prev >= limit || prev / page_size != page) ++runs;
  }
  for (int o = 16; o > 0; o >>= 1) {
    touched += __shfl_down_sync(0xffffffffu, touched, o);
    runs += __shfl_down_sync(0xffffffffu, runs, o);
  }
  if ((threadIdx.x & 31) == 0 && (touched || runs)) {
    atomicAdd(stats, touched);
    atomicAdd(stats + 1, runs);
  }
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(stats + 2, 1) == int(gridDim.x) - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x != 0) return;
  __threadfence();
  const volatile int32_t* v = stats;
  const float t = float(v[0]), r = float(v[1]);
  int32_t path = 0;
  if (v[0] > 0 && r <= c.slack * t) path = 1;
  else if (c.blocks_always || float(n) >= c.need_per_page * t) path = 2;
  stats[3] = path;
}

}  // namespace

cudaError_t choose_path_launch(const int64_t* ids, int64_t n, int64_t page_size, int64_t limit,
                               int64_t* out, int64_t pages, int32_t* stats, const ChooseArgs& c,
                               cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(stats, 0, 4 * sizeof(int32_t), stream);
  if (e == cudaSuccess && pages > 0)
    e = cudaMemsetAsync(out, 0xff, size_t(pages) * sizeof(int64_t), stream);  // -1
  if (e != cudaSuccess) return e;
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, 1024));
  choose_path_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(ids, n, page_size, limit,
                                                                        pages, out, stats, c);
  return cudaGetLastError();
}

cudaError_t mark_pages_launch(const int64_t* ids, int64_t n, int64_t page_size, int64_t limit,
                              int64_t* out, int64_t pages, cudaStream_t stream) {
  if (pages <= 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(out, 0xff, size_t(pages) * sizeof(int64_t), stream);  // -1
  if (e != cudaSuccess || n <= 0) return e;
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 4096);
  mark_pages_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(ids, n, page_size, limit,
                                                                       pages, out);
  return cudaGetLastError();
}

int transfer_variant_count() { return kNumVariants; }
const char* transfer_variant_name(int v) {
  return v >= 0 && v < kNumVariants ? kVariants[v].name : "?";
}

cudaError_t transfer_launch(const TransferArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return cudaSuccess;
  int variant = a.variant >= 0 && a.variant < kNumVariants
                    ? a.variant
                    : kDefault[std::min(std::max(a.direction, 0), 2)];
  // Device to device, the best variant measured per shape of work on random ids (H200,
  // NOTES.md runs 6-7; equivalent variants differ by up to 5% between calls): pages v12, bf16
  // token rows v23 (tiles of 32 pairs, both layouts), c4 rows v18, fp8 rows v0. Staged host
  // transfers' device-side kernel stage is device to device too and follows the same choice.
  const bool scales_too = a.scale_bytes > 0 && a.part == 0;
  if (a.variant < 0 && a.direction == 0) {
    if (!a.token) variant = 12;
    else if (!scales_too) variant = 23;
    else variant = a.value_bytes <= 128 ? 0 : 18;
  }
  // Host zero copy of token rows: the fused full grid over tiles of 32 pairs, nc loads and
  // evict-first stores. Pair-major order (v16) moved random host rows at 90-93% (bf16) and 52%
  // (fp8) against 84% and 40% with v1/v13, but broke consecutive host ids into 4 B scale
  // requests (fp8 d2h seq 33 against 41-49 GB/s); tiles keep both (NOTES run 7).
  // c4 rows device to host (576 B values, 8 B scales) take the split kernel v18: 39-41 GB/s on
  // random host ids and 50-51 on consecutive ones against v23's 33-41 and 38-48, in all eight
  // benches of runs 9-11 (fp8 rows: v18 17-18 against 26-30, so they keep v23).
  if (a.variant < 0 && a.direction != 0 && a.token)
    variant = a.direction == 1 && scales_too && a.value_bytes > 128 ? 18 : 23;
  const int64_t L = a.layers, ps = a.page_size;
  const int64_t row = ps * (a.value_bytes + a.scale_bytes);  // addressing geometry's row
  // A compact scale pool holds only the scale blocks: rows of ps * scale_bytes, same layout.
  const int64_t s_row = a.src_compact ? ps * a.scale_bytes : row;
  const int64_t d_row = a.dst_compact ? ps * a.scale_bytes : row;

  KArgs k{};
  k.check = a.check;
  k.report = a.report;
  k.s_lim = uint64_t(a.src_limit);
  k.d_lim = uint64_t(a.dst_limit);
  k.stamp = a.stamp;
  k.gen = a.gen;
  k.claim = a.claim;
  k.err = a.err;
  k.seq = a.seq;
  k.gate = a.gate;
  k.gate_want = a.gate_want;
  // The scale segment sits ps * value_bytes into a full row and at 0 in a compact one: a
  // compact side's base pointer is moved back by that much, so one offset formula serves both
  // (only in-bounds addresses are ever formed from it).
  const int64_t scale_base = ps * a.value_bytes;
  k.src = a.src_compact ? reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(a.src) - scale_base)
                        : a.src;
  k.dst = a.dst_compact ? reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(a.dst) - scale_base)
                        : a.dst;
  k.token = a.token;
  k.s_total = a.src_pages * L * a.src_row_bytes;
  k.d_total = a.dst_pages * L * a.dst_row_bytes;
  int64_t layers_eff = L;
  int64_t seg_len[2] = {0, 0};
  if (a.page_first) {
    k.s_page_stride = L * s_row;
    k.d_page_stride = L * d_row;
    k.s_layer_stride = s_row;
    k.d_layer_stride = d_row;
  } else {
    k.s_page_stride = s_row;
    k.d_page_stride = d_row;
    k.s_layer_stride = a.src_pages * s_row;
    k.d_layer_stride = a.dst_pages * d_row;
  }
  if (a.token && a.part == 2) {  // the scale segment alone, as the only segment kind
    k.seg[0].base = scale_base;
    k.seg[0].stride = a.scale_bytes;
    seg_len[0] = a.scale_bytes;
  } else if (a.token) {
    k.seg[0].base = 0;
    k.seg[0].stride = a.value_bytes;
    seg_len[0] = a.value_bytes;
    if (a.scale_bytes > 0 && a.part == 0) {
      k.seg[1].base = ps * a.value_bytes;
      k.seg[1].stride = a.scale_bytes;
      seg_len[1] = a.scale_bytes;
    }
  } else if (a.page_first) {
    layers_eff = 1;  // a page's layers are contiguous: one segment of L rows
    k.seg[0].stride = 0;
    seg_len[0] = L * row;
  } else {
    k.seg[0].stride = 0;
    seg_len[0] = row;
  }
  // Vector width: the widest access every address and bound of the segment kind is aligned to.
  int64_t common = gcd64(gcd64(k.s_page_stride, k.d_page_stride),
                         gcd64(k.s_layer_stride, k.d_layer_stride));
  common = gcd64(common, gcd64(reinterpret_cast<uintptr_t>(k.src) & 0xffff,
                               reinterpret_cast<uintptr_t>(k.dst) & 0xffff));
  common = gcd64(common, gcd64(k.s_total, k.d_total));
  static const int kV0[] = {16, 8, 4, 1};
  static const int kV1[] = {8, 4, 1};
  int vw[2] = {0, 0};
  for (int s = 0; s < 2; ++s) {
    if (seg_len[s] == 0) continue;
    const int64_t al = gcd64(gcd64(common, k.seg[s].base),
                             gcd64(k.seg[s].stride, seg_len[s]));
    vw[s] = s == 0 ? widest(al, kV0, 4) : widest(al, kV1, 3);
    // Wide accesses only device to device: through the host link they broke up the write
    // stream (9-19 GB/s against 52, NOTES.md run 2).
    if (s == 0 && vw[0] == 16 && a.direction == 0 && !a.clip) {
      const bool wide32 = (variant >= 4 && variant <= 8 && variant != 7) ||
                          (variant >= 10 && variant <= 12) || (variant >= 15 && variant <= 18) || variant == 23;
      if (wide32 && al % 32 == 0)
        vw[0] = 32;
      if (variant == 7 && al % 64 == 0) vw[0] = 64;
    }
  }
  k.psdiv = FastDiv(static_cast<uint32_t>(ps));
  k.L = static_cast<uint32_t>(layers_eff);
  k.ldiv = FastDiv(k.L);

  // Chunk counts must stay below 2^31 per launch (FastDiv's range): split the pairs if needed.
  int64_t per_pair = 0;
  for (int s = 0; s < 2; ++s)
    if (vw[s]) per_pair += layers_eff * (seg_len[s] / vw[s]);
  // (less one tile of 32 pairs: variant 23 pads the last tile)
  const int64_t batch = std::max<int64_t>(1, ((int64_t(1) << 31) - 1) / std::max<int64_t>(per_pair, 1) - 32);
  for (int64_t first = 0; first < a.n; first += batch) {
    const int64_t nb = std::min(batch, a.n - first);
    k.idx_base = first;
    k.sidx = a.src_idx + first;
    k.didx = a.dst_idx + first;
    k.n = static_cast<uint32_t>(nb);
    k.ndiv = FastDiv(static_cast<uint32_t>(nb));
    int64_t most = 0;
    for (int s = 0; s < 2; ++s) {
      if (!vw[s]) {
        k.seg[s].total = 0;
        continue;
      }
      k.seg[s].chunks = static_cast<uint32_t>(seg_len[s] / vw[s]);
      k.seg[s].cdiv = FastDiv(k.seg[s].chunks);
      k.seg[s].total = static_cast<uint32_t>(layers_eff * nb * k.seg[s].chunks);
      most = std::max<int64_t>(most, k.seg[s].total);
    }
    k.fchunks = k.seg[0].chunks + (vw[1] ? k.seg[1].chunks : 0);
    k.fdiv = FastDiv(k.fchunks);
    k.ftotal = static_cast<uint32_t>(layers_eff * nb * k.fchunks);
    k.sblocks = vw[1] ? (k.seg[1].total + 255) / 256 : 0;
    const Launch l{most, a.num_sms, variant, a.clip};
    cudaError_t err;
    switch (vw[0]) {
      case 64: err = launch_v1<64>(k, vw[1], l, stream); break;
      case 32: err = launch_v1<32>(k, vw[1], l, stream); break;
      case 16: err = launch_v1<16>(k, vw[1], l, stream); break;
      case 8: err = launch_v1<8>(k, vw[1], l, stream); break;
      case 4: err = launch_v1<4>(k, vw[1], l, stream); break;
      default: err = launch_v1<1>(k, vw[1], l, stream); break;
    }
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace wb
