/* Reading captures (traces/trace.c) and inspecting a whole file
 * (traces/inspect_path.c): microsecond and nanosecond pcap, pcapng written
 * here block by block (and, when editcap is installed, as Wireshark writes
 * it), streams that cannot seek, frame numbers, timestamps in ns, and every
 * way a file can be wrong: truncated, not a capture, empty, missing, an
 * unsupported link type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/inspect.h"
#include "jctlab/trace.h"
#include "suites.h"

#define T0_NS 1700000000123456789ull /* a timestamp with every digit set */
#define NFRAMES 3

/* Three RDMA WRITE ONLY packets of 100, 200, 300 bytes, 1 ms apart. */
static size_t frame(unsigned i, uint8_t *buf, size_t cap) {
  craft_roce_t c = {.payload_bytes = 100 * (i + 1)};
  c.h.bth.opcode = JCT_OP_RC_RDMA_WRITE_ONLY;
  c.h.bth.dest_qp = 0x11;
  c.h.bth.psn = 1000 + i;
  c.h.reth.dma_len_bytes = c.payload_bytes;
  size_t n = craft_roce(buf, cap, &c);
  ck_assert_uint_gt(n, 0);
  return n;
}

static uint64_t frame_ts(unsigned i) {
  return T0_NS + i * 1000000ull;
}

static void write_pcap(const char *path, bool nanosecond, uint32_t linktype) {
  craft_pcap_t *p = craft_pcap_open(path, nanosecond, linktype);
  for (unsigned i = 0; i < NFRAMES; i++) {
    uint8_t f[1024];
    size_t n = frame(i, f, sizeof f);
    craft_pcap_add(p, frame_ts(i), f, n, n);
  }
  craft_pcap_close(p);
}

/* pcapng (little-endian): a Section Header Block, an Interface Description
 * Block with if_tsresol = 10^-tsresol (no option when tsresol is 6, the
 * default), then one Enhanced Packet Block per frame. */
static void put32(FILE *f, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  ck_assert_uint_eq(fwrite(b, 1, 4, f), 4);
}

static void write_pcapng(const char *path, unsigned tsresol) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  put32(f, 0x0a0d0d0a); /* SHB */
  put32(f, 28);
  put32(f, 0x1a2b3c4d);
  put32(f, 1);          /* version 1.0 */
  put32(f, 0xffffffff); /* section length unknown */
  put32(f, 0xffffffff);
  put32(f, 28);
  uint32_t idb_len = tsresol == 6 ? 20 : 32;
  put32(f, 1); /* IDB */
  put32(f, idb_len);
  put32(f, JCT_LINK_EN10MB); /* link type 1, reserved 0 */
  put32(f, 65535);           /* snap length */
  if (tsresol != 6) {
    put32(f, 9u | 1u << 16); /* if_tsresol, 1 byte */
    put32(f, tsresol);       /* value and 3 bytes of padding */
    put32(f, 0);             /* opt_endofopt */
  }
  put32(f, idb_len);
  uint64_t unit = tsresol == 9 ? 1 : 1000;
  for (unsigned i = 0; i < NFRAMES; i++) {
    uint8_t fr[1024] = {0};
    size_t n = frame(i, fr, sizeof fr);
    size_t padded = (n + 3) & ~(size_t)3;
    uint64_t ts = frame_ts(i) / unit;
    put32(f, 6); /* EPB */
    put32(f, (uint32_t)(32 + padded));
    put32(f, 0); /* interface 0 */
    put32(f, (uint32_t)(ts >> 32));
    put32(f, (uint32_t)ts);
    put32(f, (uint32_t)n);
    put32(f, (uint32_t)n);
    ck_assert_uint_eq(fwrite(fr, 1, padded, f), padded);
    put32(f, (uint32_t)(32 + padded));
  }
  ck_assert_int_eq(fclose(f), 0);
}

/* Read every record and check numbers, times and lengths. */
static void expect_frames(jct_trace_t *t, bool nanosecond) {
  jct_record_t r;
  char err[256];
  for (unsigned i = 0; i < NFRAMES; i++) {
    ck_assert_int_eq(jct_trace_next(t, &r, err, sizeof err), 1);
    ck_assert_uint_eq(r.frame_no, i + 1);
    uint64_t want = nanosecond ? frame_ts(i) : frame_ts(i) / 1000 * 1000;
    ck_assert_uint_eq(r.ts_ns, want);
    uint8_t f[1024];
    size_t n = frame(i, f, sizeof f);
    ck_assert_uint_eq(r.caplen, n);
    ck_assert_uint_eq(r.wire_len, n);
    ck_assert_mem_eq(r.data, f, n);
  }
  ck_assert_int_eq(jct_trace_next(t, &r, err, sizeof err), 0);
  ck_assert_int_eq(jct_trace_next(t, &r, err, sizeof err), 0);
}

static void check_file(const char *path, const char *format, bool nanosecond) {
  jct_trace_t *t;
  char err[256] = "";
  ck_assert_msg(jct_trace_open(&t, path, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq(jct_trace_format(t), format);
  ck_assert_int_eq(jct_trace_nanosecond(t), nanosecond);
  ck_assert_int_eq(jct_trace_linktype(t), JCT_LINK_EN10MB);
  expect_frames(t, nanosecond);
  jct_trace_close(t);
}

START_TEST(pcap_micro_and_nano) {
  char path[256];
  craft_tmpname(path, sizeof path, ".pcap");
  write_pcap(path, false, JCT_LINK_EN10MB);
  check_file(path, "pcap", false);
  write_pcap(path, true, JCT_LINK_EN10MB);
  check_file(path, "pcap", true);
  unlink(path);
}
END_TEST

START_TEST(pcapng_micro_and_nano) {
  char path[256];
  craft_tmpname(path, sizeof path, ".pcapng");
  write_pcapng(path, 6);
  check_file(path, "pcapng", false);
  write_pcapng(path, 9);
  check_file(path, "pcapng", true);
  unlink(path);
}
END_TEST

/* Wireshark's own pcapng writer, when it is installed. */
START_TEST(pcapng_from_editcap) {
  if (system("command -v editcap >/dev/null 2>&1") != 0) {
    printf("editcap not installed: skipping the Wireshark pcapng check\n");
    return;
  }
  char in[256], out[256], cmd[700];
  craft_tmpname(in, sizeof in, ".pcap");
  craft_tmpname(out, sizeof out, ".pcapng");
  for (int nano = 0; nano <= 1; nano++) {
    write_pcap(in, nano, JCT_LINK_EN10MB);
    snprintf(cmd, sizeof cmd, "editcap -F pcapng '%s' '%s'", in, out);
    ck_assert_int_eq(system(cmd), 0);
    check_file(out, "pcapng", nano);
  }
  unlink(in);
  unlink(out);
}
END_TEST

/* A pipe cannot seek back after the reader looked at the file's head. */
START_TEST(stream_that_cannot_seek) {
  char path[256];
  craft_tmpname(path, sizeof path, ".pcap");
  write_pcap(path, true, JCT_LINK_EN10MB);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  uint8_t buf[8192];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  ck_assert_uint_lt(n, sizeof buf); /* fits in a pipe's buffer */
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  ck_assert_int_eq(write(fds[1], buf, n), (ssize_t)n);
  close(fds[1]);
  FILE *in = fdopen(fds[0], "rb");
  ck_assert_ptr_nonnull(in);
  jct_trace_t *t;
  char err[256] = "";
  ck_assert_msg(jct_trace_open_file(&t, in, "pipe", err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(jct_trace_nanosecond(t), 1);
  expect_frames(t, true);
  jct_trace_close(t);
  unlink(path);
}
END_TEST

START_TEST(truncated_last_record) {
  char path[256];
  craft_tmpname(path, sizeof path, ".pcap");
  write_pcap(path, false, JCT_LINK_EN10MB);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fclose(f);
  ck_assert_int_eq(truncate(path, len - 10), 0); /* inside the third record's data */

  jct_trace_t *t;
  char err[256] = "";
  ck_assert_int_eq(jct_trace_open(&t, path, err, sizeof err), 0);
  jct_record_t r;
  ck_assert_int_eq(jct_trace_next(t, &r, err, sizeof err), 1);
  ck_assert_int_eq(jct_trace_next(t, &r, err, sizeof err), 1);
  ck_assert_uint_eq(r.frame_no, 2);
  ck_assert_int_eq(jct_trace_next(t, &r, err, sizeof err), JCT_ETRUNC);
  ck_assert_ptr_nonnull(strstr(err, path));
  ck_assert_msg(strstr(err, "truncated record 3: ") != NULL, "%s", err);
  jct_trace_close(t);

  /* The whole-file inspection keeps what came before. */
  jct_inspect_t *ins = NULL;
  ck_assert_int_eq(jct_inspect_path(path, NULL, &ins, err, sizeof err), JCT_ETRUNC);
  ck_assert_ptr_nonnull(ins);
  ck_assert_msg(strstr(err, "truncated record 3") != NULL, "%s", err);
  ck_assert_uint_eq(jct_inspect_totals(ins)->frames, 2);
  ck_assert_uint_eq(jct_inspect_totals(ins)->roce_packets, 2);
  jct_inspect_free(ins);

  /* Cut inside a record header too. */
  ck_assert_int_eq(truncate(path, 24 + 16 + 5), 0);
  ck_assert_int_eq(jct_trace_open(&t, path, err, sizeof err), 0);
  ck_assert_int_eq(jct_trace_next(t, &r, err, sizeof err), JCT_ETRUNC);
  ck_assert_msg(strstr(err, "record 1") != NULL, "%s", err);
  jct_trace_close(t);
  unlink(path);
}
END_TEST

START_TEST(whole_file_inspection) {
  char path[256], err[256] = "";
  craft_tmpname(path, sizeof path, ".pcap");
  write_pcap(path, true, JCT_LINK_EN10MB);
  jct_inspect_t *ins = NULL;
  ck_assert_msg(jct_inspect_path(path, NULL, &ins, err, sizeof err) == 0, "%s", err);
  const jct_totals_t *tot = jct_inspect_totals(ins);
  ck_assert_uint_eq(tot->frames, NFRAMES);
  ck_assert_uint_eq(tot->roce_packets, NFRAMES);
  ck_assert_uint_eq(tot->opcode_packets[JCT_OP_RC_RDMA_WRITE_ONLY], NFRAMES);
  ck_assert_uint_eq(tot->first_ns, frame_ts(0));
  ck_assert_uint_eq(tot->last_ns, frame_ts(NFRAMES - 1));
  ck_assert_uint_eq(jct_inspect_nflows(ins), 1);
  ck_assert_uint_eq(jct_inspect_flow(ins, 0)->st.payload_bytes, 100 + 200 + 300);
  jct_inspect_free(ins);
  unlink(path);
}
END_TEST

static int open_err(const char *path, char *err, size_t errlen) {
  jct_trace_t *t = NULL;
  int rc = jct_trace_open(&t, path, err, errlen);
  ck_assert_ptr_null(t);
  static char sentinel;
  jct_inspect_t *ins = (jct_inspect_t *)(void *)&sentinel; /* must be reset to NULL */
  char err2[256];
  ck_assert_int_eq(jct_inspect_path(path, NULL, &ins, err2, sizeof err2), rc);
  ck_assert_ptr_null(ins);
  ck_assert_str_eq(err2, err);
  return rc;
}

START_TEST(not_a_capture) {
  char path[256], err[256];
  craft_tmpname(path, sizeof path, ".txt");
  ck_assert_int_eq(open_err(path, err, sizeof err), JCT_ENOTCAP); /* empty */
  ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "%s", err);
  ck_assert_msg(strstr(err, ": not a capture file (empty)") != NULL, "%s", err);

  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("this is a README, not a capture\n", f);
  fclose(f);
  ck_assert_int_eq(open_err(path, err, sizeof err), JCT_ENOTCAP);
  ck_assert_msg(strstr(err, ": not a capture file (") != NULL, "%s", err);

  f = fopen(path, "w");
  fputs("\xd4\xc3", f); /* half a magic */
  fclose(f);
  ck_assert_int_eq(open_err(path, err, sizeof err), JCT_ENOTCAP);
  unlink(path);

  ck_assert_int_eq(open_err(path, err, sizeof err), JCT_EIO); /* gone */
  ck_assert_msg(strstr(err, "No such file or directory") != NULL, "%s", err);
}
END_TEST

START_TEST(unsupported_link_type) {
  char path[256], err[256];
  craft_tmpname(path, sizeof path, ".pcap");
  write_pcap(path, false, 105); /* IEEE 802.11 */
  ck_assert_int_eq(open_err(path, err, sizeof err), JCT_ELINKTYPE);
  ck_assert_msg(strstr(err, ": unsupported link type 105 (IEEE802_11)") != NULL, "%s", err);
  write_pcap(path, false, JCT_LINK_RAW); /* read, though no frame here decodes */
  jct_trace_t *t;
  ck_assert_int_eq(jct_trace_open(&t, path, err, sizeof err), 0);
  ck_assert_int_eq(jct_trace_linktype(t), JCT_LINK_RAW);
  jct_trace_close(t);
  unlink(path);
}
END_TEST

Suite *trace_suite(void) {
  Suite *s = suite_create("trace");
  TCase *core = tcase_create("core");
  tcase_add_test(core, pcap_micro_and_nano);
  tcase_add_test(core, pcapng_micro_and_nano);
  tcase_add_test(core, pcapng_from_editcap);
  tcase_add_test(core, stream_that_cannot_seek);
  tcase_add_test(core, whole_file_inspection);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, truncated_last_record);
  tcase_add_test(limits, not_a_capture);
  tcase_add_test(limits, unsupported_link_type);
  suite_add_tcase(s, limits);
  return s;
}
