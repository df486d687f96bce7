/* Big-endian loads and stores for header fields (internal to jctlab). */
#ifndef JCT_WIRE_H
#define JCT_WIRE_H

#include <stdint.h>

static inline uint16_t jct__be16(const uint8_t *p) {
  return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}
static inline uint32_t jct__be24(const uint8_t *p) {
  return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}
static inline uint32_t jct__be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t jct__be64(const uint8_t *p) {
  return (uint64_t)jct__be32(p) << 32 | jct__be32(p + 4);
}
static inline uint32_t jct__le32(const uint8_t *p) {
  return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static inline void jct__put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static inline void jct__put24(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 16);
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)v;
}
static inline void jct__put32(uint8_t *p, uint32_t v) {
  jct__put16(p, (uint16_t)(v >> 16));
  jct__put16(p + 2, (uint16_t)v);
}
static inline void jct__put64(uint8_t *p, uint64_t v) {
  jct__put32(p, (uint32_t)(v >> 32));
  jct__put32(p + 4, (uint32_t)v);
}
static inline void jct__putle32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

#endif
