// torch binding of the transfer kernel: checks what Python cannot see (mapped host pointers,
// index placement), fills the launcher's arguments and runs it on the current stream.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "transfer.cuh"

namespace {

const uint8_t* device_view(const torch::Tensor& t) {
  void* p = t.data_ptr();
  if (t.is_cuda()) return static_cast<const uint8_t*>(p);
  // Pinned host memory is mapped into the device's address space; ask for that address.
  void* dp = nullptr;
  cudaError_t e = cudaHostGetDevicePointer(&dp, p, 0);
  TORCH_CHECK(e == cudaSuccess, "host buffer is not pinned and mapped (cudaHostGetDevicePointer: ",
              cudaGetErrorString(e), ")");
  return static_cast<const uint8_t*>(dp);
}

int sm_count(int device) {
  static int cached[64] = {0};
  if (device < 0 || device >= 64) return 132;
  if (!cached[device]) {
    int v = 0;
    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, device);
    cached[device] = v > 0 ? v : 132;
  }
  return cached[device];
}

// Per device: the mapped host record a checked launch reports into, and the device claim word.
struct ErrorState {
  wb::ErrorRecord* host = nullptr;
  wb::ErrorRecord* dev = nullptr;
  torch::Tensor claim;
};

ErrorState& error_state(const c10::Device& device) {
  static auto* states = new std::map<int, ErrorState>();  // never freed: outlives CUDA teardown
  ErrorState& st = (*states)[device.index()];
  if (!st.host) {
    void* p = nullptr;
    TORCH_CHECK(cudaHostAlloc(&p, sizeof(wb::ErrorRecord), cudaHostAllocMapped) == cudaSuccess,
                "cannot allocate the error record");
    std::memset(p, 0, sizeof(wb::ErrorRecord));
    void* dp = nullptr;
    TORCH_CHECK(cudaHostGetDevicePointer(&dp, p, 0) == cudaSuccess, "cannot map the error record");
    st.host = static_cast<wb::ErrorRecord*>(p);
    st.dev = static_cast<wb::ErrorRecord*>(dp);
    st.claim = torch::zeros({1}, torch::dtype(torch::kInt32).device(device));
  }
  return st;
}

// Per device and stream: the byte stamps of destination ids (duplicate detection) and the
// generation of the last checked launch. Keyed by stream so that launches on two streams
// never share a generation; stream order makes reuse on one stream safe.
struct StampState {
  torch::Tensor buf;
  uint32_t gen = 0;
};

StampState& stamp_state(const c10::Device& device, cudaStream_t stream, int64_t need) {
  static auto* states = new std::map<std::pair<int, cudaStream_t>, StampState>();
  StampState& st = (*states)[{device.index(), stream}];
  if (!st.buf.defined() || st.buf.numel() < need) {
    st.buf = torch::zeros({std::max<int64_t>(need, 1024)}, torch::dtype(torch::kInt32).device(device));
    st.gen = 0;
  }
  if (++st.gen == 0) {  // wrapped after 2^32 - 1 launches: stale stamps could match
    st.buf.zero_();
    st.gen = 1;
  }
  return st;
}

int64_t next_seq() {
  static int64_t seq = 0;
  return ++seq;
}

int64_t transfer_impl(torch::Tensor src, torch::Tensor dst, torch::Tensor src_idx,
                      torch::Tensor dst_idx, bool token, bool page_first, int64_t page_size,
                      int64_t src_pages, int64_t dst_pages, int64_t layers, int64_t value_bytes,
                      int64_t scale_bytes, bool clip, int64_t variant, bool check,
                      int64_t src_limit, int64_t dst_limit, int64_t part, bool src_compact,
                      bool dst_compact, bool report, const int32_t* gate, int32_t gate_want) {
  TORCH_CHECK(src.dtype() == torch::kUInt8 && dst.dtype() == torch::kUInt8, "pools must be uint8");
  TORCH_CHECK(src.is_contiguous() && dst.is_contiguous(), "pools must be contiguous");
  TORCH_CHECK(src_idx.is_cuda() && dst_idx.is_cuda(), "index tensors must be on the device");
  TORCH_CHECK(src_idx.dtype() == torch::kInt64 && dst_idx.dtype() == torch::kInt64,
              "index tensors must be int64");
  TORCH_CHECK(src_idx.numel() == dst_idx.numel(), "index tensors differ in length");
  TORCH_CHECK(src.is_cuda() || dst.is_cuda(), "one pool must be on the device");
  const auto device = src.is_cuda() ? src.device() : dst.device();
  TORCH_CHECK(src_idx.device() == device && dst_idx.device() == device,
              "index tensors must be on the pools' device");
  const int64_t limit = int64_t(1) << 31;
  TORCH_CHECK(src_pages * page_size < limit && dst_pages * page_size < limit,
              "pools above 2^31 tokens are not supported");
  TORCH_CHECK(part >= 0 && part <= 2, "part must be 0, 1 or 2");
  TORCH_CHECK(part == 0 || (token && scale_bytes > 0 && !clip),
              "values or scales alone: token rows with a scale block, not the stride mode");
  TORCH_CHECK(part == 2 || (!src_compact && !dst_compact), "a compact pool holds scales only");
  TORCH_CHECK(!src_compact || (src.is_cuda() && src.size(2) == page_size * scale_bytes),
              "compact src: a device pool of page_size * scale_bytes rows");
  TORCH_CHECK(!dst_compact || (dst.is_cuda() && dst.size(2) == page_size * scale_bytes),
              "compact dst: a device pool of page_size * scale_bytes rows");
  auto si = src_idx.contiguous();
  auto di = dst_idx.contiguous();
  c10::cuda::CUDAGuard guard(device);
  wb::TransferArgs a{};
  a.src = device_view(src);
  a.dst = const_cast<uint8_t*>(device_view(dst));
  a.src_idx = si.data_ptr<int64_t>();
  a.dst_idx = di.data_ptr<int64_t>();
  a.n = si.numel();
  a.layers = layers;
  a.page_size = page_size;
  a.src_pages = src_pages;
  a.dst_pages = dst_pages;
  a.value_bytes = value_bytes;
  a.scale_bytes = scale_bytes;
  a.src_row_bytes = src.size(2);
  a.dst_row_bytes = dst.size(2);
  a.token = token;
  a.page_first = page_first;
  a.clip = clip;
  a.variant = static_cast<int>(variant);
  a.num_sms = sm_count(device.index());
  a.direction = src.is_cuda() ? (dst.is_cuda() ? 0 : 1) : 2;
  a.part = static_cast<int>(part);
  a.src_compact = src_compact;
  a.dst_compact = dst_compact;
  a.gate = gate;
  a.gate_want = gate_want;
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index());
  if (check && !report && a.n > 0) {  // ids an earlier launch checked: skip the bad ones only
    TORCH_CHECK(src_limit > 0 && dst_limit > 0, "checked launch without id limits");
    a.check = true;
    a.report = false;
    a.src_limit = src_limit;
    a.dst_limit = dst_limit;
  } else if (check && a.n > 0) {
    TORCH_CHECK(src_limit > 0 && dst_limit > 0, "checked launch without id limits");
    ErrorState& es = error_state(device);
    StampState& ss = stamp_state(device, stream, dst_limit);
    a.check = true;
    a.src_limit = src_limit;
    a.dst_limit = dst_limit;
    a.stamp = reinterpret_cast<unsigned*>(ss.buf.data_ptr<int32_t>());
    a.gen = ss.gen;
    a.claim = es.claim.data_ptr<int32_t>();
    a.err = es.dev;
    a.seq = next_seq();
  }
  const cudaError_t e = wb::transfer_launch(a, stream);
  TORCH_CHECK(e == cudaSuccess, "transfer kernel launch failed: ", cudaGetErrorString(e));
  return a.seq;
}

int64_t transfer(torch::Tensor src, torch::Tensor dst, torch::Tensor src_idx, torch::Tensor dst_idx,
                 bool token, bool page_first, int64_t page_size, int64_t src_pages,
                 int64_t dst_pages, int64_t layers, int64_t value_bytes, int64_t scale_bytes,
                 bool clip, int64_t variant, bool check, int64_t src_limit, int64_t dst_limit,
                 int64_t part, bool src_compact, bool dst_compact, bool report) {
  return transfer_impl(src, dst, src_idx, dst_idx, token, page_first, page_size, src_pages,
                       dst_pages, layers, value_bytes, scale_bytes, clip, variant, check,
                       src_limit, dst_limit, part, src_compact, dst_compact, report, nullptr, 0);
}

// transfer() that runs only where the device chose it: gate is the int32 path tensor of
// choose_path, the launch does nothing unless gate[0] == want.
int64_t transfer_gated(torch::Tensor gate, int64_t want, torch::Tensor src, torch::Tensor dst,
                       torch::Tensor src_idx, torch::Tensor dst_idx, bool token, bool page_first,
                       int64_t page_size, int64_t src_pages, int64_t dst_pages, int64_t layers,
                       int64_t value_bytes, int64_t scale_bytes, bool clip, int64_t variant,
                       bool check, int64_t src_limit, int64_t dst_limit, int64_t part,
                       bool src_compact, bool dst_compact, bool report) {
  TORCH_CHECK(gate.is_cuda() && gate.dtype() == torch::kInt32 && gate.numel() >= 1,
              "gate must be a device int32 tensor");
  TORCH_CHECK(gate.device() == src_idx.device(), "gate and ids on two devices");
  return transfer_impl(src, dst, src_idx, dst_idx, token, page_first, page_size, src_pages,
                       dst_pages, layers, value_bytes, scale_bytes, clip, variant, check,
                       src_limit, dst_limit, part, src_compact, dst_compact, report,
                       gate.data_ptr<int32_t>(), static_cast<int32_t>(want));
}

// The first error a checked launch on this device reported, if it has: (code, seq, index,
// value), and the record cleared for the next one; None while nothing is reported. Reads
// mapped host memory: no synchronisation.
py::object pending_error(int64_t device_index) {
  const c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_index));
  ErrorState& es = error_state(device);
  volatile wb::ErrorRecord* r = es.host;
  if (!r->ready) return py::none();
  auto out = py::make_tuple(int64_t(r->code), int64_t(r->seq), int64_t(r->index), int64_t(r->value));
  r->ready = 0;
  c10::cuda::CUDAGuard guard(device);
  cudaMemsetAsync(es.claim.data_ptr<int32_t>(), 0, sizeof(int32_t),
                  c10::cuda::getCurrentCUDAStream(device.index()));
  return out;
}

// Copy-engine copies of byte runs, for the staged host path: runs is a cpu int64 [k, 3] tensor
// of (src offset, dst offset, length). mode 0: one cudaMemcpyAsync per run; mode 1: one
// cudaMemcpyBatchAsync (it refuses the legacy default stream, so it runs on a side stream
// ordered against the current one by events).
void copy_runs(torch::Tensor src, torch::Tensor dst, torch::Tensor runs, int64_t mode) {
  TORCH_CHECK(runs.device().is_cpu() && runs.dtype() == torch::kInt64 && runs.dim() == 2 &&
              runs.size(1) == 3, "runs must be a cpu int64 [k, 3] tensor");
  TORCH_CHECK(src.is_cuda() || dst.is_cuda(), "one buffer must be on the device");
  const auto device = src.is_cuda() ? src.device() : dst.device();
  c10::cuda::CUDAGuard guard(device);
  auto r = runs.contiguous();
  const int64_t k = r.size(0);
  if (k == 0) return;
  const int64_t* rp = r.data_ptr<int64_t>();
  const int64_t s_bytes = src.numel(), d_bytes = dst.numel();
  const char* sb = static_cast<const char*>(src.data_ptr());
  char* db = static_cast<char*>(dst.data_ptr());
  for (int64_t j = 0; j < k; ++j)
    TORCH_CHECK(rp[3 * j] >= 0 && rp[3 * j + 2] >= 0 && rp[3 * j] + rp[3 * j + 2] <= s_bytes &&
                rp[3 * j + 1] >= 0 && rp[3 * j + 1] + rp[3 * j + 2] <= d_bytes,
                "run ", j, " is outside its buffer");
  cudaStream_t cur = c10::cuda::getCurrentCUDAStream(device.index());
  if (mode == 0) {
    for (int64_t j = 0; j < k; ++j) {
      cudaError_t e = cudaMemcpyAsync(db + rp[3 * j + 1], sb + rp[3 * j], size_t(rp[3 * j + 2]),
                                      cudaMemcpyDefault, cur);
      TORCH_CHECK(e == cudaSuccess, "cudaMemcpyAsync failed: ", cudaGetErrorString(e));
    }
    return;
  }
  static cudaStream_t side[64] = {nullptr};
  const int di = device.index();
  TORCH_CHECK(di >= 0 && di < 64, "device index out of range");
  if (!side[di]) TORCH_CHECK(cudaStreamCreateWithFlags(&side[di], cudaStreamNonBlocking) == cudaSuccess);
  cudaStream_t st = cur == nullptr || cur == cudaStreamLegacy ? side[di] : cur;
  cudaEvent_t before = nullptr, after = nullptr;
  if (st != cur) {
    TORCH_CHECK(cudaEventCreateWithFlags(&before, cudaEventDisableTiming) == cudaSuccess);
    TORCH_CHECK(cudaEventCreateWithFlags(&after, cudaEventDisableTiming) == cudaSuccess);
    cudaEventRecord(before, cur);
    cudaStreamWaitEvent(st, before, 0);
  }
  std::vector<void*> dsts(k);
  std::vector<const void*> srcs(k);
  std::vector<size_t> sizes(k);
  for (int64_t j = 0; j < k; ++j) {
    srcs[j] = sb + rp[3 * j];
    dsts[j] = db + rp[3 * j + 1];
    sizes[j] = size_t(rp[3 * j + 2]);
  }
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t idx0 = 0;
  cudaError_t e = cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), size_t(k), &attr,
                                       &idx0, 1, st);
  if (st != cur) {
    cudaEventRecord(after, st);
    cudaStreamWaitEvent(cur, after, 0);
    cudaEventDestroy(before);
    cudaEventDestroy(after);
  }
  TORCH_CHECK(e == cudaSuccess, "cudaMemcpyBatchAsync failed: ", cudaGetErrorString(e));
}

// One 2D copy-engine transfer on the current stream: `height` rows of `width` bytes, `spitch`
// apart from byte `soff` of src, `dpitch` apart from byte `doff` of dst (kernels/scales.py:
// every scale block of a host pool into a compact device pool).
void copy_2d(torch::Tensor src, int64_t soff, int64_t spitch, torch::Tensor dst, int64_t doff,
             int64_t dpitch, int64_t width, int64_t height) {
  TORCH_CHECK(src.is_contiguous() && dst.is_contiguous(), "buffers must be contiguous");
  TORCH_CHECK(src.is_cuda() || dst.is_cuda(), "one buffer must be on the device");
  TORCH_CHECK(soff >= 0 && doff >= 0 && width >= 0 && height >= 0 && spitch >= width &&
              dpitch >= width, "bad 2D copy geometry");
  const int64_t sb = src.numel() * src.element_size(), db = dst.numel() * dst.element_size();
  if (width == 0 || height == 0) return;
  TORCH_CHECK(soff + (height - 1) * spitch + width <= sb, "2D copy reads past src");
  TORCH_CHECK(doff + (height - 1) * dpitch + width <= db, "2D copy writes past dst");
  const auto device = src.is_cuda() ? src.device() : dst.device();
  c10::cuda::CUDAGuard guard(device);
  cudaError_t e = cudaMemcpy2DAsync(static_cast<char*>(dst.data_ptr()) + doff, size_t(dpitch),
                                    static_cast<const char*>(src.data_ptr()) + soff, size_t(spitch),
                                    size_t(width), size_t(height), cudaMemcpyDefault,
                                    c10::cuda::getCurrentCUDAStream(device.index()));
  TORCH_CHECK(e == cudaSuccess, "cudaMemcpy2DAsync failed: ", cudaGetErrorString(e));
}

// The arguments of the page-marking launches: 1-D int64 device ids and a geometry whose pages hold
// every id below `limit` (mark_pages, choose_path).
static void check_page_ids(const torch::Tensor& ids, int64_t page_size, int64_t pages, int64_t limit,
                           const char* what) {
  TORCH_CHECK(ids.is_cuda() && ids.dtype() == torch::kInt64 && ids.dim() == 1,
              "ids must be a 1-D int64 device tensor");
  TORCH_CHECK(page_size > 0 && pages >= 0 && limit >= 0 && limit <= pages * page_size,
              what, ": bad page geometry");
}

// The host pages that device ids touch, as a device int64 tensor of `pages` entries: the page
// number where some id in [0, limit) names it, -1 elsewhere (kernels/scales.py
// device_block_ids: one fill and one launch, no synchronisation).
torch::Tensor mark_pages(torch::Tensor ids, int64_t page_size, int64_t pages, int64_t limit) {
  check_page_ids(ids, page_size, pages, limit, "mark_pages");
  c10::cuda::CUDAGuard guard(ids.device());
  auto x = ids.contiguous();
  auto out = torch::empty({pages}, ids.options());
  const cudaError_t e = wb::mark_pages_launch(x.data_ptr<int64_t>(), x.numel(), page_size, limit,
                                              out.data_ptr<int64_t>(), pages,
                                              c10::cuda::getCurrentCUDAStream(ids.device().index()));
  TORCH_CHECK(e == cudaSuccess, "mark_pages launch failed: ", cudaGetErrorString(e));
  return out;
}

// The path of host-side device ids chosen on the device (kernels/scales.py device_path):
// (marks, path): marks as mark_pages, path a 1-element int32 device tensor (0 the default
// launch, 1 one launch for ids page by page, 2 the touched pages' scale blocks) for
// transfer_gated. One memset pair and one launch, no synchronisation.
py::tuple choose_path(torch::Tensor ids, int64_t page_size, int64_t pages, int64_t limit,
                      double slack, double need_per_page, bool blocks_always) {
  check_page_ids(ids, page_size, pages, limit, "choose_path");
  c10::cuda::CUDAGuard guard(ids.device());
  auto x = ids.contiguous();
  auto out = torch::empty({pages}, x.options());
  auto stats = torch::empty({4}, torch::dtype(torch::kInt32).device(x.device()));
  const wb::ChooseArgs c{float(slack), float(need_per_page), blocks_always};
  const cudaError_t e = wb::choose_path_launch(
      x.data_ptr<int64_t>(), x.numel(), page_size, limit, out.data_ptr<int64_t>(), pages,
      stats.data_ptr<int32_t>(), c, c10::cuda::getCurrentCUDAStream(x.device().index()));
  TORCH_CHECK(e == cudaSuccess, "choose_path launch failed: ", cudaGetErrorString(e));
  return py::make_tuple(out, stats.narrow(0, 3, 1), stats);
}

// The page order of device ids (kernels/scales.py device_page_order): (out, gather src ids,
// gather scratch slots, scatter scratch slots, scatter dst ids), the four lists the rows of
// out, a [4, n] int64 tensor, on the current stream, no synchronisation; pairs with an id
// outside [0, limit) get -1 in both scale passes. radix: two cub radix sorts of int32 page
// keys (stable), else a counting sort by page (atomics: any order inside a page).
py::tuple page_order_impl(torch::Tensor src_idx, torch::Tensor dst_idx, int64_t page_size,
                          int64_t src_pages, int64_t dst_pages, int64_t src_limit,
                          int64_t dst_limit, bool radix) {
  TORCH_CHECK(src_idx.is_cuda() && dst_idx.is_cuda() && src_idx.dtype() == torch::kInt64 &&
              dst_idx.dtype() == torch::kInt64 && src_idx.dim() == 1 && dst_idx.dim() == 1,
              "ids must be 1-D int64 device tensors");
  TORCH_CHECK(src_idx.numel() == dst_idx.numel(), "index tensors differ in length");
  TORCH_CHECK(src_idx.device() == dst_idx.device(), "index tensors on two devices");
  TORCH_CHECK(page_size > 0 && src_pages >= 0 && dst_pages >= 0 &&
              src_limit <= src_pages * page_size && dst_limit <= dst_pages * page_size,
              "page_order: bad page geometry");
  const int64_t n = src_idx.numel();
  TORCH_CHECK(8 * n + 2 * (src_pages + dst_pages + 2) < (int64_t(1) << 31),
              "page_order: too many ids");
  c10::cuda::CUDAGuard guard(src_idx.device());
  auto si = src_idx.contiguous();
  auto di = dst_idx.contiguous();
  const wb::OrderArgs o{n, page_size, src_pages, dst_pages, src_limit, dst_limit};
  const auto launch = radix ? wb::page_order_radix_launch : wb::page_order_launch;
  const int64_t words = radix ? 8 * n : 2 * (src_pages + dst_pages + 2) + 2 * n;
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(si.device().index());
  // cub's scratch size depends on n and the key bits only: asked once per shape (host work
  // per call is what a per-call sort pays first).
  static auto* sizes = new std::map<std::tuple<bool, int64_t, int64_t, int64_t>, size_t>();
  const auto key = std::make_tuple(radix, n, src_pages, dst_pages);
  auto found = sizes->find(key);
  if (found == sizes->end()) {
    size_t temp_bytes = 0;
    const cudaError_t e = launch(nullptr, nullptr, o, nullptr, nullptr, temp_bytes, nullptr, stream);
    TORCH_CHECK(e == cudaSuccess, "page_order: ", cudaGetErrorString(e));
    found = sizes->emplace(key, temp_bytes).first;
  }
  size_t temp_bytes = found->second;
  // One allocation from the caching allocator: the int32 work words, then cub's scratch.
  const int64_t work_bytes = (words * 4 + 255) / 256 * 256;
  auto buf = torch::empty({work_bytes + int64_t(std::max<size_t>(temp_bytes, 16))},
                          torch::dtype(torch::kUInt8).device(si.device()));
  auto out = torch::empty({4, n}, si.options());
  int32_t* work = reinterpret_cast<int32_t*>(buf.data_ptr<uint8_t>());
  const cudaError_t e = launch(si.data_ptr<int64_t>(), di.data_ptr<int64_t>(), o, work,
                               buf.data_ptr<uint8_t>() + work_bytes, temp_bytes,
                               out.data_ptr<int64_t>(), stream);
  TORCH_CHECK(e == cudaSuccess, "page_order launch failed: ", cudaGetErrorString(e));
  return py::make_tuple(out, out[0], out[1], out[2], out[3]);
}

py::tuple page_order(torch::Tensor src_idx, torch::Tensor dst_idx, int64_t page_size,
                     int64_t src_pages, int64_t dst_pages, int64_t src_limit, int64_t dst_limit) {
  return page_order_impl(src_idx, dst_idx, page_size, src_pages, dst_pages, src_limit, dst_limit,
                         false);
}

py::tuple page_order_radix(torch::Tensor src_idx, torch::Tensor dst_idx, int64_t page_size,
                           int64_t src_pages, int64_t dst_pages, int64_t src_limit,
                           int64_t dst_limit) {
  return page_order_impl(src_idx, dst_idx, page_size, src_pages, dst_pages, src_limit, dst_limit,
                         true);
}

std::vector<std::string> variants() {
  std::vector<std::string> out;
  for (int v = 0; v < wb::transfer_variant_count(); ++v) out.push_back(wb::transfer_variant_name(v));
  return out;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "wb index-K transfer kernel";
  m.def("transfer", &transfer, "copy token or page segments of every layer between pools; "
        "returns the launch's sequence number when checked on the device, else 0");
  m.def("transfer_gated", &transfer_gated, "transfer, run only where gate[0] == want "
        "(a path chosen on the device)");
  m.def("choose_path", &choose_path, "the touched pages and the path of host-side device ids");
  m.def("pending_error", &pending_error, "the first error a checked launch reported, or None");
  m.def("variants", &variants, "names of the kernel variants, by number");
  m.def("copy_2d", &copy_2d, "one 2D copy-engine transfer on the current stream");
  m.def("mark_pages", &mark_pages, "the host pages device ids touch (-1 elsewhere)");
  m.def("page_order", &page_order, "the page order of device ids (a counting sort by page)");
  m.def("page_order_radix", &page_order_radix,
        "the page order of device ids (radix sorts of int32 page keys)");
  m.def("copy_runs", &copy_runs, "copy-engine copies of (src offset, dst offset, length) runs");
}
