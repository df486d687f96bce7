/* `jctlab rank` on verbs (issue 14) on real soft-RoCE: this machine's
 * kernel has no rdma_rxe, the lab's VMs do. One boot of two VMs (`jctlab
 * lab-exec --vms 2`: jctlab-vm0 at 198.18.0.1 and jctlab-vm1 at
 * 198.18.0.2, each its own rxe0 on eth0, one L2 segment; Open MPI and
 * Slurm from the host's root), one Slurm over both (scripts/slurm-local
 * conf/start: slurmctld and slurmd in VM 0, slurmd in VM 1, the
 * configuration on the host's root), and a list of parts (lab_rank.h),
 * each some shell run in the VMs and a check of what they printed:
 *   - refusals, each VM alone (lab_rank_one.c): `mpirun -np 2` on its one
 *     rxe0 refuses --gid-index 7 and 0 (VM 1), -np 3 for 2 ranks and a drop
 *     at the switch (VM 0; exit 2, one line);
 *   - hosts, VM 0 alone: a PFC storm at host:1 sends its frames from eth0
 *     in faulted repetitions only; a targeted drop there, which rxe's
 *     loopback never shows eth0, makes its case invalid;
 *   - fq, VM 1 meanwhile: a host delay's fq at eth0's root undone however
 *     its agent ends;
 *   - four, across the VMs (lab_rank_two.c; the acceptance): `srun -N 2 -n
 *     4 --ntasks-per-node=2 --mpi=pmix` and `mpirun -np 4 --host
 *     jctlab-vm0:2,jctlab-vm1:2` (in a Slurm allocation) each run a 4-rank
 *     ring, two tasks a VM sharing its rxe0: valid documents, 4 ranks' ops
 *     timed, the launcher named, clocks aligned;
 *   - pair, across the VMs: `srun -N 2 --ntasks-per-node=1` runs a 2-rank
 *     ring clean, with a targeted drop at host:1 (one rcvd_seq_err on the
 *     sender a faulted repetition), aimed at nothing (invalid), and at the
 *     switch (exit 2);
 *   - nothing left behind: no qemu.
 * One boot (TCG: 2-4 min here with the lock free), in the build pass only
 * (the time is the VMs' and rxe's, which no sanitizer sees). Skipped,
 * saying why, where the lab cannot run (no qemu or kernel image) or Open
 * MPI or Slurm is missing. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "craft.h"
#include "harness/lab/lab.h"
#include "lab_rank.h"
#include "suites.h"
#include "testkit.h"

#define LIMIT_S 850.0

/* What the boot runs, in order (lab_rank.h). */
extern const lab_rank_part_t lab_rank_faults; /* lab_rank_faults.c */
static const lab_rank_part_t *const parts[] = {
    &lab_rank_refusals, &lab_rank_hosts, &lab_rank_fq, &lab_rank_four, &lab_rank_pair,
    &lab_rank_faults,
};
#define NPARTS (sizeof parts / sizeof parts[0])

/* Both VMs run it: the helpers, then VM 1's fragments and its slurmd;
 * VM 0 starts slurmctld and its slurmd, runs the alone fragments, waits
 * for both nodes, runs the both fragments. */
static const char prelude[] =
    "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root\n"
    "ip link set lo up\n"
    "if ip -4 addr show dev eth0 | grep -q ' 198.18.0.2/'; then me=jctlab-vm1 ADDR=198.18.0.2;\n"
    "else me=jctlab-vm0 ADDR=198.18.0.1; fi\n"
    "hostname $me\n"
    /* slurmd wants a cgroup v2 tree and, without systemd, to make it
     * itself (cgroup.conf IgnoreSystemd, beside slurm.conf). */
    "mount -t cgroup2 none /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/system.slice &&\n"
    "  echo '+cpu +memory +pids' >/sys/fs/cgroup/cgroup.subtree_control\n"
    "up() { cut -d' ' -f1 /proc/uptime; }\n"
    "launch() {\n"
    "  name=$1 t=$(up); shift\n"
    "  \"$@\" >/root/$name.out 2>/root/$name.err\n"
    "  echo \"== $name exit $?\"; echo \"== $name took $t to $(up) s\"\n"
    "  grep -v '^$' /root/$name.err | sed \"s/^/== $name err: /\" | head -5\n"
    "}\n"
    "run() {\n"
    "  name=$1 scen=$2; shift 2\n"
    "  launch $name timeout 300 srun -N 2 --ntasks-per-node=1 --mpi=pmix $J rank $scen \\\n"
    "    --gid-index 1 \"$@\"\n"
    "}\n"
    "mpi1() {\n"
    "  name=$1 np=$2; shift 2\n"
    "  launch $name timeout 300 mpirun --allow-run-as-root --oversubscribe -q -np $np \\\n"
    "    $J rank \"$@\"\n"
    "}\n"
    "show() { echo \"== json $1\"; cat $2; echo; echo '== end'; }\n"
    "showlog() { echo \"== json $1\"; echo '['; sed '$!s/$/,/' $2; echo ']'; echo '== end'; }\n"
    "slurm() { # slurm-local CMD ARGS, its failure as \"== CMD exit 1\" and its stderr\n"
    "  c=$1; shift\n"
    "  $SRC/scripts/slurm-local $c \"$@\" 2>/root/slurm-$c.err ||\n"
    "    { echo \"== $c exit 1\"; sed \"s/^/== $c err: /\" /root/slurm-$c.err; }\n"
    "}\n";

/* The boot's script into path. */
static void write_script(const char *path, const char *conf) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#!/bin/sh\nJ=%s SRC=%s CONF=%s\n", JCT_BINARY, JCT_SOURCE_DIR, conf);
  fputs(prelude, f);
  fputs("echo \"== $me up at $(up) s\"\n", f);
  for (size_t i = 0; i < NPARTS; i++)
    if (parts[i]->vars) parts[i]->vars(f);
  fputs("if [ $me = jctlab-vm1 ]; then\n", f);
  for (size_t i = 0; i < NPARTS; i++)
    if (parts[i]->vm1) fprintf(f, "# %s\n%s", parts[i]->name, parts[i]->vm1);
  fputs(
      "  slurm start $CONF $me; echo \"== vm1 slurmd started at $(up) s\"; exec sleep 100000\nfi\n"
      "export SLURM_CONF=$CONF OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,tcp \\\n"
      "  OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0\n"
      "slurm start $CONF $me\n",
      f);
  for (size_t i = 0; i < NPARTS; i++)
    if (parts[i]->alone) fprintf(f, "# %s\n%s", parts[i]->name, parts[i]->alone);
  fputs("echo \"== vm0 alone done at $(up) s\"\nslurm wait $CONF 2\necho \"== both nodes at $(up) "
        "s\"\n",
        f);
  for (size_t i = 0; i < NPARTS; i++)
    if (parts[i]->both) fprintf(f, "# %s\n%s", parts[i]->name, parts[i]->both);
  fputs("slurm stop $CONF\necho \"== vm0 done at $(up) s\"\n", f);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(chmod(path, 0755), 0);
}

int lab_rank_exit(const char *out, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "== %s exit ", name);
  const char *p = strstr(out, key);
  return p ? atoi(p + strlen(key)) : -1;
}

void lab_rank_err(const char *out, const char *name, char *buf, size_t len) {
  char key[64];
  snprintf(key, sizeof key, "== %s err: ", name);
  size_t n = 0;
  buf[0] = 0;
  for (const char *p = out; (p = strstr(p, key)) && n < len; p++) {
    const char *e = strchr(p, '\n');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    n += (size_t)snprintf(buf + n, len - n, "%.*s\n", (int)(l - strlen(key)), p + strlen(key));
  }
}

void lab_rank_expect(const char *out, const char *name, int status, char *err, size_t errlen) {
  lab_rank_err(out, name, err, errlen);
  int got = lab_rank_exit(out, name);
  ck_assert_msg(got == status, "%s: exit %d, not %d\n%s", name, got, status, err);
}

/* VM 0's document NAME: the lines between its "== json NAME" and "== end",
 * less VM 1's ("vm1: ..."), which the relay interleaves with VM 0's a line
 * at a time whenever both VMs print. */
json_t *lab_rank_doc(const char *out, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "== json %s\n", name);
  const char *js = out;
  while ((js = strstr(js, key)) && js != out && js[-1] != '\n')
    js++;
  ck_assert_msg(js, "no document of %s:\n%s", name, out);
  char *text = malloc(strlen(js) + 1);
  ck_assert_ptr_nonnull(text);
  size_t n = 0;
  bool ended = false;
  for (const char *p = js + strlen(key); *p && !ended;) {
    size_t l = strcspn(p, "\n");
    ended = l == 6 && !strncmp(p, "== end", 6);
    if (!ended && strncmp(p, "vm1: ", 5)) {
      memcpy(text + n, p, l);
      n += l;
      text[n++] = '\n';
    }
    p += l + (p[l] == '\n');
  }
  text[n] = '\0';
  ck_assert_msg(ended, "%s: no '== end':\n%s", name, js);
  json_t *doc = parse_json(text, name);
  free(text);
  return doc;
}

const char *lab_rank_line(const char *out, const char *key, char *buf, size_t len) {
  const char *p = strstr(out, key);
  ck_assert_msg(p, "no '%s' line:\n%s", key, out);
  p += strlen(key);
  snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
  return buf;
}

json_int_t lab_rank_counter(json_t *c, const char *side, size_t nranks, size_t rank,
                            const char *name) {
  char path[64];
  snprintf(path, sizeof path, "device_counters_by_rank.%s", side);
  json_t *by = jget(c, path);
  ck_assert_uint_eq(json_array_size(by), nranks);
  json_t *e = json_array_get(by, rank);
  ck_assert_int_eq(jint(e, "rank"), (json_int_t)rank);
  return jint(jget(e, "counters"), name);
}

static int count_qemu(void) {
  FILE *p = popen("pgrep -c -f '^qemu-system-x86_64'", "r");
  int n = 0;
  if (p) {
    if (fscanf(p, "%d", &n) != 1) n = 0;
    pclose(p);
  }
  return n;
}

START_TEST(two_vms) {
  char why[256] = "";
  const char *tools = "{ command -v mpirun && command -v srun && command -v salloc; } >/dev/null";
  if (!jct__lab_available(why, sizeof why) || system(tools) != 0) {
    printf("lab_rank: SKIPPED: %s\n",
           why[0] ? why : "no mpirun or srun (scripts/setup-deps --with-test-tools)");
    return;
  }
  char script[256], dir[256], cmd[768], conf[300];
  craft_tmpname(dir, sizeof dir, ".slurm");
  unlink(dir); /* a name only: slurm-local makes the folder */
  snprintf(cmd, sizeof cmd,
           "%s/scripts/slurm-local conf %s 2 jctlab-vm0=198.18.0.1,jctlab-vm1=198.18.0.2 "
           ">/dev/null",
           JCT_SOURCE_DIR, dir);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
  craft_tmpname(script, sizeof script, ".sh");
  write_script(script, conf);
  int qemu_before = count_qemu();
  char *argv[] = {JCT_BINARY, "lab-exec", "--vms", "2", "--limit", "800", script, NULL};
  result_t r = run_cmd(argv, NULL, LIMIT_S);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
  unlink(script);
  const char *keep = getenv("LAB_RANK_OUT"); /* the boot's output kept there, to read */
  FILE *kf = keep ? fopen(keep, "w") : NULL;
  if (kf) fputs(r.out, kf), fclose(kf);
  ck_assert_msg(r.status == 0, "lab-exec --vms 2: exit %d\n%s\n%s", r.status, r.out, r.err);
  ck_assert_msg(!strstr(r.out, "== start exit") && !strstr(r.out, "== wait exit"), "%s", r.out);
  for (size_t i = 0; i < NPARTS; i++)
    parts[i]->check(r.out);
  result_free(&r);
  ck_assert_int_eq(count_qemu(), qemu_before);
}
END_TEST

/* The relay interleaves VM 1's lines with VM 0's whenever both print: a
 * document VM 0 shows still reads whole, and VM 1's own "== json" line
 * is not VM 0's. */
START_TEST(interleaved) {
  const char out[] = "vm1: == json a\nvm1: {\"x\": 2}\nvm1: == end\n"
                     "== json a\n[\nvm1: == vm1 slurmd started at 9 s\n{\"x\": 1},\n"
                     "vm1: == end\n{\"x\": 3}\n]\n== end\n";
  json_t *doc = lab_rank_doc(out, "a");
  ck_assert_uint_eq(json_array_size(doc), 2);
  ck_assert_int_eq(jint(doc, "0.x"), 1);
  ck_assert_int_eq(jint(doc, "1.x"), 3);
  json_decref(doc);
}
END_TEST

Suite *lab_rank_suite(void) {
  Suite *s = suite_create("lab_rank");
  TCase *r = tcase_create("reader");
  tcase_add_test(r, interleaved);
  suite_add_tcase(s, r);
  TCase *t = tcase_create("two_vms");
  tcase_set_timeout(t, LIMIT_S + 30); /* within ctest's 900 s */
  /* The build pass only: the time is the VMs' and rxe's, which no
   * sanitizer sees (scripts/test). */
  tcase_set_tags(t, "sanitizer-skip");
  tcase_add_test(t, two_vms);
  suite_add_tcase(s, t);
  return s;
}
