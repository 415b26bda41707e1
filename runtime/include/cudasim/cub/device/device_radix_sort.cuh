//===- device_radix_sort.cuh - cudasim's cub::DeviceRadixSort::SortPairs ---===//
//
// A stable sort of (key, value) pairs by the key bits [beginBit, endBit), on
// the stream in order, with CUB's two-call protocol (a null temp storage asks
// for its size).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_CUDASIM_CUB_DEVICE_RADIX_SORT_CUH
#define BRAID_CUDASIM_CUB_DEVICE_RADIX_SORT_CUH

#include "cudasim/cudasim.h"

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

namespace cub {
struct DeviceRadixSort {
  template <typename K, typename V>
  static cudaError_t SortPairs(void *temp, size_t &tempBytes, const K *keysIn, K *keysOut,
                               const V *valuesIn, V *valuesOut, int numItems, int beginBit = 0,
                               int endBit = sizeof(K) * 8, cudaStream_t stream = nullptr) {
    static_assert(std::is_unsigned_v<K> || std::is_signed_v<K>, "integer keys");
    if (!temp) {
      tempBytes = 256 + sizeof(K) * static_cast<size_t>(std::max(numItems, 0));
      return cudaSuccess;
    }
    if (numItems < 0 || beginBit < 0 || endBit > static_cast<int>(sizeof(K) * 8) ||
        beginBit >= endBit)
      return cudaErrorInvalidValue;
    if (numItems == 0)
      return cudaSuccess;
    const size_t n = static_cast<size_t>(numItems);
    if (!cudasim::isDevicePointer(temp, tempBytes) ||
        !cudasim::isDevicePointer(keysIn, n * sizeof(K)) ||
        !cudasim::isDevicePointer(keysOut, n * sizeof(K)) ||
        !cudasim::isDevicePointer(valuesIn, n * sizeof(V)) ||
        !cudasim::isDevicePointer(valuesOut, n * sizeof(V)))
      return cudaErrorInvalidDevicePointer;
    cudasim::enqueue(stream, [=] {
      using U = std::make_unsigned_t<K>;
      // Radix order of signed keys: the sign bit flipped (CUB's twiddle).
      auto radix = [&](K key) {
        U u = static_cast<U>(key);
        if constexpr (std::is_signed_v<K>)
          u ^= U(1) << (sizeof(K) * 8 - 1);
        int width = endBit - beginBit;
        U mask = width >= static_cast<int>(sizeof(U) * 8) ? ~U(0) : U((U(1) << width) - 1);
        return static_cast<U>((u >> beginBit) & mask);
      };
      std::vector<size_t> order(n);
      std::iota(order.begin(), order.end(), size_t(0));
      std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { // stable: ties by index
        U rx = radix(keysIn[x]), ry = radix(keysIn[y]);
        return rx < ry || (rx == ry && x < y);
      });
      std::vector<K> keys(n);
      std::vector<V> values(n);
      for (size_t i = 0; i < n; ++i) {
        keys[i] = keysIn[order[i]];
        values[i] = valuesIn[order[i]];
      }
      std::copy(keys.begin(), keys.end(), keysOut);
      std::copy(values.begin(), values.end(), valuesOut);
    });
    return cudaSuccess;
  }
};
} // namespace cub

#endif // BRAID_CUDASIM_CUB_DEVICE_RADIX_SORT_CUH
