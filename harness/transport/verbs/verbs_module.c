/* jctlab-verbs.so's one export (verbs.h, harness/base/module.h): the
 * verbs transport's functions, which the module's other files keep hidden
 * (built with -fvisibility=hidden). */
#include "verbs.h"

__attribute__((visibility("default"))) extern const struct jct__verbs_ops jct__verbs_module_ops;
const struct jct__verbs_ops jct__verbs_module_ops = {
    .new_ = jct__verbs_new,
    .open = jct__verbs_open,
    .make_qps = jct__verbs_make_qps,
    .connect_ends = jct__verbs_connect_ends,
    .connect = jct__verbs_connect,
    .connected = jct__verbs_connected,
    .device = jct__verbs_device,
    .port = jct__verbs_port,
    .hooks = jct__verbs_hooks,
    .attach = jct__verbs_attach,
    .outstanding = jct__verbs_outstanding,
    .failed = jct__verbs_failed,
    .free = jct__verbs_free,
};
