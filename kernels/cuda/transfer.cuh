// Launcher interface of the index-K transfer kernel: plain CUDA, no torch, so `nvcc -c` can
// check it on a machine without torch's CUDA headers.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

namespace wb {

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
};

// Returns cudaSuccess or the launch error. Nothing is validated here: the caller has.
cudaError_t transfer_launch(const TransferArgs& a, cudaStream_t stream);

// Number of kernel variants transfer_launch accepts (0 .. count-1).
int transfer_variant_count();
const char* transfer_variant_name(int v);

}  // namespace wb
