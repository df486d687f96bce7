/* report.md: the report in GitHub-flavoured Markdown (report_int.h), the
 * plots as images next to it (the SVG files of the same directory). Text
 * from the result document is escaped where Markdown would read it as
 * markup: a '|' would split a table cell, a line break would end a row,
 * '*', '_', '`', '[', ']', '<' and '\' would emphasise, link or quote. */
#include <stdio.h>
#include <string.h>

#include "report_int.h"

static void text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '\n' || ch == '\r' || ch == '\t')
      fputc(' ', f);
    else if (strchr("\\|*_`[]<>#", ch))
      fprintf(f, "\\%c", ch);
    else
      fputc(ch, f);
  }
}

static void begin(FILE *f, const char *title) {
  (void)f, (void)title;
}

static void end(FILE *f) {
  fputc('\n', f);
}

static void heading(FILE *f, int level, const char *s) {
  fprintf(f, "%.*s ", level, "######");
  text(f, s);
  fprintf(f, "\n\n");
}

static void para(FILE *f, const char *s) {
  text(f, s);
  fprintf(f, "\n\n");
}

static void row(FILE *f, const char *const *cells, size_t n) {
  fprintf(f, "|");
  for (size_t i = 0; i < n; i++) {
    fputc(' ', f);
    text(f, cells[i]);
    fprintf(f, " |");
  }
  fputc('\n', f);
}

static void table_begin(FILE *f, const char *const *head, size_t n) {
  row(f, head, n);
  fprintf(f, "|");
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%s", i ? " ---: |" : " --- |");
  fputc('\n', f);
}

static void table_end(FILE *f) {
  fputc('\n', f);
}

static int figure(FILE *f, const jct__plot_t *p, const char *dir, unsigned seq, char *err,
                  size_t errlen) {
  (void)dir, (void)seq, (void)err, (void)errlen;
  fprintf(f, "![");
  text(f, p->title);
  /* The file name is jctlab's own (letters, digits, '-', '_', '.'): no escaping needed. */
  fprintf(f, "](%s)\n\n*", p->file);
  text(f, p->title);
  fprintf(f, "*\n\n");
  return 0;
}

const jct__doc_ops_t jct__md_ops = {
    .name = "report.md",
    .begin = begin,
    .end = end,
    .heading = heading,
    .para = para,
    .table_begin = table_begin,
    .table_row = row,
    .table_end = table_end,
    .figure = figure,
};
