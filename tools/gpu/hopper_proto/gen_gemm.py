"""Generate a stand-alone CUDA C++ prototype of the Hopper GEMM path (TMA -> mbarrier -> wgmma, producer /
consumer warpgroups) with its own cuBLAS comparison, to measure what the instruction sequences reach on
an H200 before the language lowers to them.  Usage: python gen_gemm.py OUT.cu [--bn 256] [--stages 4]."""
import argparse

def wgmma_asm(n: int, dtype: str) -> str:
    """One inline-asm wgmma m64n{n}k16 with f32 accumulators d[0 .. n/2-1], both operands by descriptor."""
    regs = n // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    cons = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n'
            f'wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype} {{{outs}}}, %{regs}, %{regs + 1}, p, 1, 1, 0, 0;\\n}}\\n"'
            f' : {cons} : "l"(da), "l"(db), "r"(scale_d));')

TEMPLATE = r'''
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cmath>

#define BM 128
#define BN @BN@
#define BK 64
#define STAGES @STAGES@
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* b, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(b)), "r"(count) : "memory"); }
__device__ __forceinline__ void mbar_expect_tx(uint64_t* b, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(b)), "r"(bytes) : "memory"); }
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(b)) : "memory"); }
__device__ __forceinline__ void mbar_wait(uint64_t* b, int phase) {
  uint32_t ok;
  do { asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                    : "=r"(ok) : "r"(smem_addr(b)), "r"(phase) : "memory"); } while (!ok); }
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* m, int c0, int c1, uint64_t* bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(smem_addr(dst)), "l"(m), "r"(c0), "r"(c1), "r"(smem_addr(bar)) : "memory"); }
__device__ __forceinline__ uint64_t desc128(const void* p) {
  uint64_t a = smem_addr(p);
  return ((a & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62); }

__global__ void __launch_bounds__(384, 1) gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                                               half* C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = (unsigned char*)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  half* sA = (half*)smem;
  half* sB = sA + STAGES * BM * BK;
  uint64_t* full = (uint64_t*)(sB + STAGES * BN * BK);
  uint64_t* empty = full + STAGES;
  int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN, KT = K / BK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], 2); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 0) {
      for (int kt = 0; kt < KT; ++kt) {
        int s = kt % STAGES;
        if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
        mbar_expect_tx(&full[s], (BM + BN) * BK * 2);
        tma_load_2d(sA + s * BM * BK, &tmA, kt * BK, m0, &full[s]);
        tma_load_2d(sB + s * BN * BK, &tmB, kt * BK, n0, &full[s]);
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    int c = wg - 1;
    float d[BN / 2];
    #pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
    for (int kt = 0; kt < KT; ++kt) {
      int s = kt % STAGES;
      mbar_wait(&full[s], (kt / STAGES) & 1);
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      #pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        uint64_t da = desc128(sA + s * BM * BK + c * 64 * BK + kk * 16);
        uint64_t db = desc128(sB + s * BN * BK + kk * 16);
        int scale_d = 1;
        @WGMMA@
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      if (t == 0) mbar_arrive(&empty[s]);
    }
    int w = t / 32, l = t % 32;
    int row = m0 + c * 64 + w * 16 + l / 4;
    #pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      int col = n0 + 8 * j + 2 * (l % 4);
      *(__half2*)&C[(size_t)row * N + col] = __floats2half2_rn(d[4 * j], d[4 * j + 1]);
      *(__half2*)&C[(size_t)(row + 8) * N + col] = __floats2half2_rn(d[4 * j + 2], d[4 * j + 3]);
    }
  }
}

static PFN_cuTensorMapEncodeTiled_v12000 encode;
static CUtensorMap kmajor_map(const half* p, int rows, int cols, int box_rows) {
  CUtensorMap m;
  cuuint64_t dim[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  cuuint64_t stride[1] = {(cuuint64_t)cols * 2};
  cuuint32_t box[2] = {BK, (cuuint32_t)box_rows};
  cuuint32_t es[2] = {1, 1};
  CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void*)p, dim, stride, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { printf("cuTensorMapEncodeTiled failed %d\n", (int)r); exit(1); }
  return m;
}

int main(int argc, char** argv) {
  int M = argc > 1 ? atoi(argv[1]) : 4096, N = argc > 2 ? atoi(argv[2]) : 4096, K = argc > 3 ? atoi(argv[3]) : 4096;
  int rounds = 5, iters = argc > 4 ? atoi(argv[4]) : 20;
  cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&encode, 12000, cudaEnableDefault, &q));
  std::vector<half> hA((size_t)M * K), hB((size_t)N * K);
  srand(1);
  for (auto& v : hA) v = __float2half((rand() % 17 - 8) / 8.0f);
  for (auto& v : hB) v = __float2half((rand() % 17 - 8) / 8.0f);
  half *A, *B, *C, *R;
  CHECK(cudaMalloc(&A, hA.size() * 2)); CHECK(cudaMalloc(&B, hB.size() * 2));
  CHECK(cudaMalloc(&C, (size_t)M * N * 2)); CHECK(cudaMalloc(&R, (size_t)M * N * 2));
  CHECK(cudaMemcpy(A, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(B, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice));
  CUtensorMap tmA = kmajor_map(A, M, K, BM), tmB = kmajor_map(B, N, K, BN);
  size_t smem = STAGES * (BM + BN) * BK * 2 + 2 * STAGES * 8 + 1024;
  CHECK(cudaFuncSetAttribute(gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  dim3 grid(M / BM, N / BN);
  cublasHandle_t h; cublasCreate(&h);
  float alpha = 1, beta = 0;
  auto ours = [&]() { gemm<<<grid, 384, smem>>>(tmA, tmB, C, M, N, K); };
  auto ref = [&]() { cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16F, K, A, CUDA_R_16F, K, &beta, R,
                                  CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); };
  ours(); ref(); CHECK(cudaDeviceSynchronize());
  std::vector<half> hC((size_t)M * N), hR((size_t)M * N);
  CHECK(cudaMemcpy(hC.data(), C, hC.size() * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hR.data(), R, hR.size() * 2, cudaMemcpyDeviceToHost));
  double maxd = 0; int bad = 0;
  for (size_t i = 0; i < hC.size(); ++i) { double d = fabs((double)__half2float(hC[i]) - __half2float(hR[i])); maxd = std::max(maxd, d); }
  for (int s = 0; s < 64; ++s) {  // float64 spot checks
    int i = rand() % M, j = rand() % N; double acc = 0;
    for (int k = 0; k < K; ++k) acc += (double)__half2float(hA[(size_t)i * K + k]) * __half2float(hB[(size_t)j * K + k]);
    double got = __half2float(hC[(size_t)i * N + j]);
    if (fabs(got - acc) > 1e-3 * fabs(acc) + 0.5) { if (bad < 4) printf("mismatch (%d,%d) got %g want %g\n", i, j, got, acc); ++bad; }
  }
  printf("check: max |ours - cublas| = %g, float64 spot-check mismatches %d/64\n", maxd, bad);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<double> ratio;
  double flop = 2.0 * M * N * K;
  for (int r = 0; r < rounds; ++r) {
    float t[2];
    for (int which = 0; which < 2; ++which) {
      cudaEventRecord(e0);
      for (int i = 0; i < iters; ++i) (which ? ref() : ours());
      cudaEventRecord(e1); cudaEventSynchronize(e1);
      cudaEventElapsedTime(&t[which], e0, e1);
    }
    printf("round %d: ours %.1f TFLOP/s  cublas %.1f TFLOP/s  ratio %.3f\n", r, flop * iters / t[0] / 1e9, flop * iters / t[1] / 1e9, t[1] / t[0]);
    ratio.push_back(t[1] / t[0]);
  }
  std::sort(ratio.begin(), ratio.end());
  printf("GEMM %dx%dx%d BN=%d STAGES=%d: median ratio to cuBLAS %.3f (%.3f-%.3f)\n", M, N, K, BN, STAGES, ratio[rounds / 2], ratio[0], ratio[rounds - 1]);
  return 0;
}
'''

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--bn", type=int, default=256)
    ap.add_argument("--stages", type=int, default=4)
    a = ap.parse_args()
    src = (TEMPLATE.replace("@BN@", str(a.bn)).replace("@STAGES@", str(a.stages))
           .replace("@WGMMA@", wgmma_asm(a.bn, "f16")))
    with open(a.out, "w") as f:
        f.write(src)

if __name__ == "__main__":
    main()
