#pragma once
// IEEE binary16 and bfloat16 storage types with float conversions (round to nearest even).
// Plain values: thread-safe, trivially copyable, layout = one uint16_t.
#include <cstdint>
#include <cstring>

namespace collie {

struct Half {
  uint16_t bits = 0;
  static Half from_float(float f);
  float to_float() const;
};

struct BFloat16 {
  uint16_t bits = 0;
  static BFloat16 from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((u >> 16) | 0x40)};
    u += 0x7fffu + ((u >> 16) & 1u);
    return BFloat16{static_cast<uint16_t>(u >> 16)};
  }
  float to_float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace collie
