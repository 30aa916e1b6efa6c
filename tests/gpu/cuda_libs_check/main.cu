// Links against cuDNN and cuBLAS(Lt) and prints their versions; needs no GPU (no handle is created).
#include <cstdio>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

int main() {
  std::printf("cudnn header %d, library %zu; cublasLt library %zu\n", CUDNN_VERSION, cudnnGetVersion(),
              cublasLtGetVersion());
  int v = 0;
  cublasGetProperty(MAJOR_VERSION, &v);
  std::printf("cublas major %d\n", v);
  return 0;
}
