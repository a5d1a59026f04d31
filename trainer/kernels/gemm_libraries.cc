// GEMM libraries opened at run time. Debian's OpenBLAS and BLIS both export cblas_sgemm, so each is opened
// RTLD_LOCAL and called through its own handle; none of them is a link-time dependency.
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "trainer/kernels/gemm_backends.h"

namespace megascale::trainer {

namespace {

using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;

DnnlSgemm dnnl_sgemm = nullptr;
CblasSgemm openblas_sgemm = nullptr;
CblasSgemm blis_sgemm = nullptr;

void* symbolFrom(const char* soname, const char* symbol) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  return handle == nullptr ? nullptr : dlsym(handle, symbol);
}

int cblasTrans(Trans t) { return t == Trans::kNo ? kCblasNoTrans : kCblasTrans; }

void checkIntRange(const GemmCall<float>& c, const char* library) {
  constexpr int64_t kMax = 0x7fffffff;
  if (c.m > kMax || c.n > kMax || c.k > kMax || c.lda > kMax || c.ldb > kMax || c.ldc > kMax) {
    throw std::length_error(std::string(library) + " takes 32-bit sizes; this GEMM is larger");
  }
}

void runCblas(CblasSgemm f, const char* library, const GemmCall<float>& c) {
  checkIntRange(c, library);
  f(kCblasRowMajor, cblasTrans(c.trans_a), cblasTrans(c.trans_b), static_cast<int>(c.m), static_cast<int>(c.n),
    static_cast<int>(c.k), 1.0f, c.a, static_cast<int>(c.lda), c.b, static_cast<int>(c.ldb), c.beta, c.c,
    static_cast<int>(c.ldc));
}

void runOneDnn(const GemmCall<float>& c) {
  int status = dnnl_sgemm(static_cast<char>(c.trans_a), static_cast<char>(c.trans_b), c.m, c.n, c.k, 1.0f, c.a, c.lda,
                          c.b, c.ldb, c.beta, c.c, c.ldc);
  if (status != 0) throw std::runtime_error("oneDNN dnnl_sgemm failed with status " + std::to_string(status));
}
void runOpenBlas(const GemmCall<float>& c) { runCblas(openblas_sgemm, "OpenBLAS", c); }
void runBlis(const GemmCall<float>& c) { runCblas(blis_sgemm, "BLIS", c); }

}  // namespace

void appendLibraryBackends(std::vector<GemmBackend>& out) {
  dnnl_sgemm = reinterpret_cast<DnnlSgemm>(symbolFrom("libdnnl.so.2", "dnnl_sgemm"));
  if (dnnl_sgemm != nullptr) out.push_back({"onednn", runOneDnn});
  openblas_sgemm = reinterpret_cast<CblasSgemm>(symbolFrom("libopenblas.so.0", "cblas_sgemm"));
  if (openblas_sgemm != nullptr) out.push_back({"openblas", runOpenBlas});
  blis_sgemm = reinterpret_cast<CblasSgemm>(symbolFrom("libblis.so.4", "cblas_sgemm"));
  if (blis_sgemm != nullptr) out.push_back({"blis", runBlis});
}

}  // namespace megascale::trainer
