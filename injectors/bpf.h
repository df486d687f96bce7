/* A classic BPF interpreter for where= filters (internal to injectors/).
 *
 * pcap_offline_filter() interprets the program pcap_compile() made; on the
 * switch's per-frame path it cost about 19 machine instructions per BPF
 * instruction (a "udp dst port 4791" frame: 11 BPF instructions, about 210
 * machine instructions, bench/inject_rate). This one checks the program
 * once, when the injector is made, so that running it needs no check of
 * jump targets, opcodes or scratch-memory indices, only of the packet's
 * bounds, and fuses loads with the jumps that test them. Semantics are those of the BPF paper
 * (McCanne and Jacobson, "The BSD Packet Filter", USENIX 1993) as libpcap's bpf_filter() gives
 * them: a load outside the captured bytes or a division by zero returns 0 (no match); BPF_LEN is
 * the frame's length; shifts by 32 or more give 0. suites/check_injector.c runs both on the same
 * frames and filters.
 */
#ifndef JCT_INJ_BPF_H
#define JCT_INJ_BPF_H

#include <pcap/pcap.h> /* pcap/bpf.h, with the types it needs */
#include <stddef.h>
#include <stdint.h>

/* A copy of prog for jct__bpf_run(), or NULL when it is not one this
 * interpreter runs (an unknown opcode, a jump backward or outside the
 * program, a scratch index beyond BPF_MEMWORDS, a division by a constant
 * zero, no return at the end) or memory is out. In the copy, a load that
 * a conditional jump on a constant follows, and that no jump lands between,
 * becomes one instruction (pcap_compile's programs are mostly such pairs:
 * "ldh [12]; jeq #0x800"), so the interpreter dispatches about half as
 * often. Free it with free(). */
struct bpf_insn *jct__bpf_prepare(const struct bpf_program *prog);

/* Run a prepared program over pkt (len bytes, all captured): the return
 * value, 0 meaning no match. */
uint32_t jct__bpf_run(const struct bpf_insn *insns, const uint8_t *pkt, uint32_t len);

#endif
