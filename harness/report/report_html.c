/* report.html: the report as one self-contained page (report_int.h): no
 * script, no external file, the plots' SVG copied inline.
 *
 * gnuplot gives every SVG the same ids (gnuplot_canvas, gpPt0 ... the
 * point symbols that <use xlink:href='#gpPt7'> draws): two plots in one
 * page would share them, and an id must be unique in a document. Each
 * copied SVG has its ids, and the references to them (href='#x',
 * url(#x)), prefixed with "p<seq>-". Its XML declaration is dropped (not
 * allowed inside HTML) and its <title> becomes the plot's own. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "junit.h"
#include "report_int.h"

static void text(FILE *f, const char *s) {
  jct__xml_escape(f, s, true);
}

static void begin(FILE *f, const char *title) {
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
  text(f, title);
  fprintf(f, "</title>\n<style>\n"
             "body { font-family: sans-serif; max-width: 70em; margin: 1em auto; padding: 0 1em;"
             " color: #222; }\n"
             "table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }\n"
             "th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }\n"
             /* A spec is one long word (pkt=0:4,1:4,...): break it rather than the page. */
             "td, p, li, h1, h2, h3 { overflow-wrap: anywhere; }\n"
             "th:first-child, td:first-child, td.w { text-align: left; }\n"
             "th { background: #f0f0f0; }\n"
             "figure { margin: 1em 0; max-width: 800px; }\n"
             "figure svg { display: block; width: 100%%; height: auto; background: #fff; }\n"
             "figcaption { font-size: 0.9em; color: #555; }\n"
             "</style>\n</head>\n<body>\n");
}

static void end(FILE *f) {
  fprintf(f, "</body>\n</html>\n");
}

static void heading(FILE *f, int level, const char *s) {
  fprintf(f, "<h%d>", level);
  text(f, s);
  fprintf(f, "</h%d>\n", level);
}

static void para(FILE *f, const char *s) {
  fprintf(f, "<p>");
  text(f, s);
  fprintf(f, "</p>\n");
}

/* Figures right-aligned, words left (a figure starts with a digit, or is "n/a"). */
static bool is_figure(const char *s) {
  return (*s >= '0' && *s <= '9') || !strcmp(s, "n/a");
}

static void cells(FILE *f, const char *tag, const char *const *c, size_t n) {
  fprintf(f, "<tr>");
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "<%s%s>", tag,
            i && *tag == 't' && tag[1] == 'd' && !is_figure(c[i]) ? " class=\"w\"" : "");
    text(f, c[i]);
    fprintf(f, "</%s>", tag);
  }
  fprintf(f, "</tr>\n");
}

static void table_begin(FILE *f, const char *const *head, size_t n) {
  bool any = false;
  for (size_t i = 0; i < n; i++)
    any |= head[i][0] != 0;
  fprintf(f, "<table>\n");
  if (any) cells(f, "th", head, n);
}

static void table_row(FILE *f, const char *const *c, size_t n) {
  cells(f, "td", c, n);
}

static void table_end(FILE *f) {
  fprintf(f, "</table>\n");
}

/* The ids the SVG defines, as one string "\nid1\nid2\n" for lookups. */
static char *collect_ids(const char *svg) {
  size_t cap = 64, used = 1;
  char *ids = malloc(cap);
  if (!ids) return NULL;
  strcpy(ids, "\n");
  for (const char *p = svg; (p = strstr(p, " id=")) != NULL;) {
    p += 4;
    char q = *p;
    if (q != '"' && q != '\'') continue;
    const char *e = strchr(p + 1, q);
    if (!e) break;
    size_t n = (size_t)(e - p - 1);
    if (used + n + 2 > cap) {
      while (used + n + 2 > cap)
        cap *= 2;
      char *grown = realloc(ids, cap);
      if (!grown) {
        free(ids);
        return NULL;
      }
      ids = grown;
    }
    memcpy(ids + used, p + 1, n);
    used += n;
    ids[used++] = '\n';
    ids[used] = 0;
    p = e;
  }
  return ids;
}

static bool is_id(const char *ids, const char *s, size_t n) {
  for (const char *p = ids; (p = strchr(p, '\n')) != NULL && p[1]; p++)
    if (!strncmp(p + 1, s, n) && p[1 + n] == '\n') return true;
  return false;
}

/* Copy the SVG with its ids prefixed and its title replaced. */
static void copy_svg(FILE *f, const char *svg, const char *ids, unsigned seq, const char *title) {
  const char *p = strstr(svg, "<svg");
  while (p && *p) {
    if (!strncmp(p, " id=", 4) && (p[4] == '"' || p[4] == '\'')) {
      fprintf(f, " id=%cp%u-", p[4], seq);
      p += 5;
    } else if (*p == '#') {
      size_t n = strcspn(p + 1, "'\")");
      if (p[1 + n] && is_id(ids, p + 1, n))
        fprintf(f, "#p%u-", seq), p++;
      else
        fputc(*p++, f);
    } else if (!strncmp(p, "<title>", 7) && strstr(p, "</title>")) {
      fprintf(f, "<title>");
      text(f, title);
      fprintf(f, "</title>");
      p = strstr(p, "</title>") + 8;
    } else {
      fputc(*p++, f);
    }
  }
}

static int figure(FILE *f, const jct__plot_t *pl, const char *dir, unsigned seq, char *err,
                  size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, pl->file);
  FILE *in = fopen(path, "rb");
  if (!in) return jct__errf(err, errlen, JCT_EIO, "%s: %s", path, strerror(errno));
  char *svg = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&svg, &len);
  char buf[8192];
  size_t n;
  while (mem && (n = fread(buf, 1, sizeof buf, in)) > 0)
    fwrite(buf, 1, n, mem);
  bool bad = ferror(in);
  fclose(in);
  if (!mem || fclose(mem) || bad) {
    free(svg);
    return jct__errf(err, errlen, JCT_EIO, "%s: cannot read it back", path);
  }
  const char *open_tag = strstr(svg, "<svg"), *close_tag = strstr(svg, "</svg>");
  char *ids = collect_ids(svg);
  if (!open_tag || !close_tag || !ids) {
    free(svg);
    free(ids);
    return jct__errf(err, errlen, JCT_EIO, "%s: not an SVG drawing", path);
  }
  fprintf(f, "<figure id=\"fig-%u\">\n", seq);
  copy_svg(f, svg, ids, seq, pl->title);
  fprintf(f, "\n<figcaption>");
  text(f, pl->title);
  fprintf(f, " (<a href=\"%s\">%s</a>)</figcaption>\n</figure>\n", pl->file, pl->file);
  free(svg);
  free(ids);
  return 0;
}

const jct__doc_ops_t jct__html_ops = {
    .name = "report.html",
    .begin = begin,
    .end = end,
    .heading = heading,
    .para = para,
    .table_begin = table_begin,
    .table_row = table_row,
    .table_end = table_end,
    .figure = figure,
};
