/* A plain main() for a fuzz target built without libFuzzer: replays each
 * file named on the command line, or every regular file in a directory so
 * named, through LLVMFuzzerTestOneInput(). This is how ctest runs a corpus
 * (and how a crash file from the fuzzer is replayed under a debugger or in
 * the sanitizer build).
 *
 * Exit status: 0 when every input ran (a broken input aborts the process
 * with the sanitizer's or the target's report), 1 when a file could not be
 * read or no input was found.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read the whole file at path into a malloc'd buffer of exactly its size
 * (so that the sanitizers catch a read past its end). */
static int replay_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    perror(path);
    return -1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    len += fread(buf + len, 1, cap - len, fp);
    if (len < cap) break;
    uint8_t *bigger = realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  int failed = ferror(fp) || !buf;
  fclose(fp);
  if (failed) {
    fprintf(stderr, "%s: cannot read\n", path);
    free(buf);
    return -1;
  }
  uint8_t *exact = malloc(len ? len : 1);
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file in dir, in name order. Returns how many ran, or
 * -1 on an error. */
static long replay_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  long ran = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **more = realloc(names, cap * sizeof *names);
      if (!more) {
        ran = -1;
        break;
      }
      names = more;
    }
    size_t need = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(need);
    if (!names[n]) {
      ran = -1;
      break;
    }
    snprintf(names[n], need, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, name_cmp);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (ran >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
      ran = replay_file(names[i]) == 0 ? ran + 1 : -1;
    free(names[i]);
  }
  free(names);
  return ran;
}

int main(int argc, char **argv) {
  long total = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 1;
  }
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    long ran = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : (replay_file(argv[i]) == 0 ? 1 : -1);
    if (ran < 0) return 1;
    total += ran;
  }
  if (total == 0) {
    fprintf(stderr, "%s: no inputs found\n", argv[0]);
    return 1;
  }
  printf("%s: %ld inputs replayed, none failed\n", argv[0], total);
  return 0;
}
