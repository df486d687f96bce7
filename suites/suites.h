/* The Check suites, one per area (suites/check_<area>.c). */
#ifndef JCT_SUITES_H
#define JCT_SUITES_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

Suite *roce_suite(void);
Suite *decode_suite(void);
Suite *trace_suite(void);
Suite *inspect_suite(void);
Suite *profile_suite(void);
Suite *infer_suite(void);
Suite *cli_suite(void);
Suite *schedule_suite(void);
Suite *clock_suite(void);
Suite *dilation_suite(void);
Suite *topo_suite(void);
Suite *fabric_suite(void);
Suite *switch_suite(void);
Suite *uroce_suite(void);
TCase *uroce_ranks_tcase(void); /* uroce's "ranks" case (check_uroce_ranks.c) */
Suite *dcqcn_suite(void);
Suite *exec_suite(void);
Suite *run_suite(void);
Suite *injector_suite(void);
Suite *injector_kinds_suite(void);
Suite *stall_suite(void);
Suite *timeout_suite(void);
Suite *inject_suite(void);
Suite *hostfault_suite(void);
TCase *hostfault_kill_tcase(void); /* hostfault's "killed" case; NULL when not built */
TCase *
agents_guard_tcase(void); /* agents' "guard" case (check_agents_guard.c); NULL without verbs */
/* agents' "qdisc" and "pause" cases (check_agents_qdisc.c); NULL without verbs. */
TCase *agents_qdisc_tcase(void);
TCase *agents_pause_tcase(void);
Suite *rank_suite(void);
Suite *report_suite(void);
Suite *sweep_suite(void);
Suite *scenario_suite(void);
Suite *replay_stats_suite(void);
Suite *replay_suite(void);
Suite *model_suite(void);
Suite *real_rates_suite(void);
Suite *fidelity_suite(void);
Suite *capture_suite(void);
Suite *lab_replay_suite(void);
Suite *lab_rank_suite(void);
Suite *agents_suite(void);
Suite *hostile_suite(void);
Suite *wire_suite(void);
Suite *clos_suite(void);
Suite *links_suite(void);
Suite *reroute_suite(void);

#endif
