/* uroce's ranks' options and counters (uroce_opts.h). */
#include "backend.h"
#include "uroce_opts.h"

void jct__uroce_ranks_opts(const jct_run_opts_t *o, jct_dcqcn_params_t *dcqcn,
                           jct__ranks_opts_t *ro) {
  jct_dcqcn_params(dcqcn, o->cc_profile);
  jct_dcqcn_dilate(dcqcn, jct_run_cc_dilation(o));
  *ro = (jct__ranks_opts_t){.rate_bps = o->rate_bps,
                            .dcqcn = jct_run_cc(o) == JCT_CC_DCQCN ? dcqcn : NULL,
                            .cnp_dscp = JCT__CNP_DSCP,
                            .nic_queue_pkts = o->nic_queue_pkts,
                            .nak_delay_ns = o->nak_delay_ns,
                            .nak_react_ns = o->nak_react_ns,
                            .go_backs = o->go_backs,
                            .ngo_backs = o->ngo_backs,
                            .stalls = o->stalls,
                            .nstalls = o->nstalls,
                            .path_mtu_bytes = o->path_mtu_bytes ? o->path_mtu_bytes : 4096,
                            .timeout = o->timeout,
                            .retry_cnt = o->retry_cnt,
                            .dscp = JCT__DATA_DSCP,
                            .data_prio = JCT__DATA_PRIO,
                            .per_qp_sport = o->clos && o->clos->leaves};
}

void jct__uroce_tstats(const jct_uroce_stats_t *st, uint64_t nic_paused_ns,
                       jct_transport_stats_t *t) {
  *t = (jct_transport_stats_t){.packets = st->tx_pkts,
                               .data_packets = st->tx_data_pkts,
                               .retx_packets = st->retx_pkts,
                               .retx_bytes = st->retx_bytes,
                               .rx_packets = st->rx_pkts,
                               .naks = st->rx_naks,
                               .timeouts = st->timeouts,
                               .timeouts_after_nak = st->timeouts_after_nak,
                               .go_back_n = st->go_back_n,
                               .out_of_seq_packets = st->out_of_seq_pkts,
                               .dup_packets = st->dup_pkts,
                               .cnps = st->tx_cnps,
                               .nic_paused_ns = nic_paused_ns,
                               .counted = JCT_TSTAT_ALL};
}

void jct__uroce_conn_counts(const jct__ranks_t *ranks, uint32_t nconns, jct_conn_counts_t *out) {
  for (uint32_t c = 0; c < nconns; c++) {
    out[c].retx_packets = jct__ranks_conn_retx(ranks, c);
    jct__ranks_conn_cc(ranks, c, &out[c].rate_cuts, &out[c].below_line_rate_ns);
  }
}
