/* cuda_host.h: CUDA's execution model on the CPU, enough for the .cu files extract generates, so
 * that they run without a GPU (extract/check/cuda_host.py; tests/test_cuda_host.py).
 *
 * extract/check/cuda_host.py force-includes this header and rewrites each launch
 * `kernel<<<grid, block>>>(args)` as `pk_launch(kernel, grid, block)(args)`; nothing else of the
 * .cu changes. A launch runs every (block, thread) of the grid one after the other on the calling
 * CPU thread, with threadIdx, blockIdx, blockDim and gridDim thread-local variables set for each;
 * launches run in program order, as on one stream. The order of the threads within a launch is
 * pk_cuda_host_order (0: x fastest, blocks in order; 1: reversed; 2: a fixed shuffle): results
 * must not depend on it, since a GPU promises no order either. Device memory is host memory, so
 * the entry points take host pointers. No shared memory, __syncthreads or atomics: the generated
 * kernels use none (a kernel that did would not compile here). */
#ifndef PK_CUDA_HOST_H
#define PK_CUDA_HOST_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};
typedef dim3 uint3;

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

/* the order of the threads of a launch (see above). This header goes into one translation unit
 * (the .cu), so it may define these. */
extern "C" {
int pk_cuda_host_order = 0;
void pk_cuda_host_set_order(int order) { pk_cuda_host_order = order; }
}

namespace pk_cuda_host {

inline std::vector<std::size_t> order(std::size_t n)
{
    std::vector<std::size_t> o(n);
    for (std::size_t t = 0; t < n; t++)
        o[t] = pk_cuda_host_order == 1 ? n - 1 - t : t;
    if (pk_cuda_host_order == 2) {
        std::uint64_t s = 0x9E3779B97F4A7C15ULL;
        for (std::size_t t = n; t > 1; t--) {      /* Fisher-Yates with a fixed generator */
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            std::size_t u = (std::size_t)(s % t), tmp = o[t - 1];
            o[t - 1] = o[u];
            o[u] = tmp;
        }
    }
    return o;
}

template <class... P>
struct Launch {
    void (*kernel)(P...);
    dim3 grid, block;

    template <class... A>
    void operator()(A... args) const
    {
        const std::size_t per_block = (std::size_t)block.x * block.y * block.z;
        const std::size_t n = (std::size_t)grid.x * grid.y * grid.z * per_block;
        gridDim = grid;
        blockDim = block;
        for (std::size_t t : order(n)) {
            std::size_t b = t / per_block, i = t % per_block;
            blockIdx = dim3((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                            (unsigned)(b / grid.x / grid.y));
            threadIdx = dim3((unsigned)(i % block.x), (unsigned)(i / block.x % block.y),
                             (unsigned)(i / block.x / block.y));
            kernel(P(args)...);
        }
    }
};

}  // namespace pk_cuda_host

template <class... P>
pk_cuda_host::Launch<P...> pk_launch(void (*kernel)(P...), dim3 grid, dim3 block)
{
    return {kernel, grid, block};
}

#endif
