// Launcher interface of the index-K transfer kernel: plain CUDA, no torch, so `nvcc -c` can
// check it on a machine without torch's CUDA headers.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

namespace wb {

// Where the kernel reports the first bad index of a checked launch: pinned, mapped host memory
// that the host reads without synchronising (the claim word lives in device memory).
struct ErrorRecord {
  int32_t ready;             // 1 once the fields below are written
  int32_t code;              // 1 src id out of range, 2 dst id out of range, 3 duplicate dst id
  int64_t seq;               // the launch's sequence number (TransferArgs::seq)
  int64_t index;             // position in the index tensors
  int64_t value;             // the offending id
};

struct TransferArgs {
  const uint8_t* src;        // device pointers (host pools: their mapped device address)
  uint8_t* dst;
  const int64_t* src_idx;    // device int64 ids, n of each
  const int64_t* dst_idx;
  int64_t n;
  int64_t layers;
  int64_t page_size;
  int64_t src_pages, dst_pages;
  int64_t value_bytes, scale_bytes;   // addressing geometry (another one in the buggy mode)
  int64_t src_row_bytes, dst_row_bytes;  // the pools' real row size (bounds for clipping)
  bool token;                // token granularity (else page)
  bool page_first;           // layout
  bool clip;                 // buggy mode: drop chunks outside either buffer
  int variant;               // kernel variant, -1 = default for the direction
  int num_sms;
  int direction;             // 0 d2d, 1 d2h, 2 h2d (selects the default variant)
  // Token rows with a scale block, moved in parts (kernels/scales.py): part 0 both segment
  // kinds, 1 the values alone, 2 the scales alone. With part 2 either side may be a compact
  // scale pool: the same layout and page count, rows of page_size * scale_bytes holding only
  // the scale blocks (a staging copy of a host pool's scales, or a scratch in page order).
  int part = 0;
  bool src_compact = false, dst_compact = false;
  // Device-side checks (transfer() with device-resident ids): ids outside [0, limit) are
  // skipped and reported, a destination id named twice is reported (one 32-bit stamp per
  // destination id, generation `gen`; its copies race but stay inside dst).
  bool check = false;
  bool report = true;        // with check: stamp and report; false: only skip bad ids (a
                             // second pass over ids that an earlier launch checked)
  int64_t src_limit = 0, dst_limit = 0;
  unsigned* stamp = nullptr;  // dst_limit words
  unsigned gen = 0;           // never 0, never equal to a stale stamp of this buffer
  int32_t* claim = nullptr;   // device word: 0 until some thread reports
  ErrorRecord* err = nullptr; // device address of the mapped host record
  int64_t seq = 0;
  // A path chosen on the device (choose_path_launch): with gate set, the launch does nothing
  // unless *gate == gate_want (every block returns at once), so the alternatives of a choice
  // are all enqueued and one runs, with no host read.
  const int32_t* gate = nullptr;
  int32_t gate_want = 0;
};

// Returns cudaSuccess or the launch error. Nothing is validated here beyond the device-side
// checks above: the caller has validated shapes and pointers.
cudaError_t transfer_launch(const TransferArgs& a, cudaStream_t stream);

// The host pages that ids in [0, limit) touch (kernels/scales.py: the touched pages' scale
// blocks, for ids not read on the host): out[p] = p for each page p = id / page_size that some
// such id names, -1 for every other of the `pages` entries. One fill and one launch on
// `stream`; ids outside the range mark nothing.
cudaError_t mark_pages_launch(const int64_t* ids, int64_t n, int64_t page_size, int64_t limit,
                              int64_t* out, int64_t pages, cudaStream_t stream);

// The path of host-side token ids that are not read on the host (kernels/scales.py
// device_path), chosen on the device: marks as mark_pages_launch (out: `pages` int64), and in
// stats (int32 x 4, zeroed here) the pages touched, the runs of one page (an id whose page
// differs from the previous id's; bad ids count as no page), a block counter, and the path:
// 1 when runs <= slack * touched (ids page by page: one launch), else 2 when blocks_always or
// n >= need_per_page * touched (the touched pages' scale blocks), else 0 (the default launch).
struct ChooseArgs {
  float slack, need_per_page;
  bool blocks_always;
};
cudaError_t choose_path_launch(const int64_t* ids, int64_t n, int64_t page_size, int64_t limit,
                               int64_t* out, int64_t pages, int32_t* stats, const ChooseArgs& c,
                               cudaStream_t stream);

// Page order of n pairs (kernels/scales.py device_page_order): a counting sort by source page
// and by destination page, on `stream`, no synchronisation. Pairs with an id outside [0, limit)
// go last on both sides with -1 ids (the scale passes skip them).
struct OrderArgs {
  int64_t n, page_size, s_pages, d_pages, s_lim, d_lim;
};
// work: 2 * (s_pages + d_pages + 2) + 2 * n int32; out: 4 * n int64 (gather src ids, gather
// scratch slots, scatter scratch slots, scatter dst ids). With temp == nullptr only sets
// temp_bytes (the scan's scratch) and returns.
cudaError_t page_order_launch(const int64_t* src_idx, const int64_t* dst_idx, const OrderArgs& o,
                              int32_t* work, void* temp, size_t& temp_bytes, int64_t* out,
                              cudaStream_t stream);
// The same lists by two radix sorts of int32 page keys (stable: inside a page, pairs in their
// order), each over the bits the page count needs. work: 8 * n int32; temp as above (the
// larger of the two sorts' scratch). kernels/cuda/order.cu holds both.
cudaError_t page_order_radix_launch(const int64_t* src_idx, const int64_t* dst_idx,
                                    const OrderArgs& o, int32_t* work, void* temp,
                                    size_t& temp_bytes, int64_t* out, cudaStream_t stream);

// Number of kernel variants transfer_launch accepts (0 .. count-1).
int transfer_variant_count();
const char* transfer_variant_name(int v);

}  // namespace wb
