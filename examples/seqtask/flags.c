/* A command line as one table: parsing, --help and metadata (flags.h). */
#include "flags.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/error.h>

int fl_find(const fl_table *t, const char *name, size_t len) {
  for (int i = 0; i < t->n; i++)
    if (strlen(t->flags[i].name) == len &&
        strncmp(t->flags[i].name, name, len) == 0)
      return i;
  return -1;
}

const char *fl_allowed(const fl_flag *f, char *buf, size_t len) {
  switch (f->type) {
  case FL_INT:
    snprintf(buf, len, "an integer in [%.0f, %.0f]", f->lo, f->hi);
    break;
  case FL_REAL:
    snprintf(buf, len, "a number in %c%g, %g%c", f->lo_open ? '(' : '[', f->lo,
             f->hi, f->hi_open ? ')' : ']');
    break;
  case FL_CHOICE: {
    size_t n = (size_t)snprintf(buf, len, "one of ");
    for (int i = 0; f->choices[i] && n < len; i++)
      n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
                            f->choices[i]);
    break;
  }
  case FL_STR:
    snprintf(buf, len, "a string of fewer than %zu bytes", f->size);
    break;
  case FL_BOOL:
    snprintf(buf, len, "true or false");
    break;
  }
  return buf;
}

int fl_set(const fl_flag *f, void *cfg, const char *value) {
  char *p = (char *)cfg + f->off, *end;
  errno = 0;
  switch (f->type) {
  case FL_INT: {
    long long v = strtoll(value, &end, 10);
    if (end == value || *end || errno || (double)v < f->lo || (double)v > f->hi)
      return -1;
    *(long *)(void *)p = (long)v;
    return 0;
  }
  case FL_REAL: {
    double v = strtod(value, &end);
    if (end == value || *end || errno || !isfinite(v))
      return -1;
    if (v < f->lo || v > f->hi || (f->lo_open && v == f->lo) ||
        (f->hi_open && v == f->hi))
      return -1;
    *(double *)(void *)p = v;
    return 0;
  }
  case FL_CHOICE:
    for (int i = 0; f->choices[i]; i++)
      if (strcmp(value, f->choices[i]) == 0) {
        *(int *)(void *)p = i;
        return 0;
      }
    return -1;
  case FL_STR:
    if (strlen(value) >= f->size)
      return -1;
    memcpy(p, value, strlen(value) + 1);
    return 0;
  case FL_BOOL:
    if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0)
      return -1;
    *(bool *)(void *)p = value[0] == 't';
    return 0;
  }
  return -1;
}

void fl_get(const fl_flag *f, const void *cfg, char *buf, size_t len) {
  const char *p = (const char *)cfg + f->off;
  switch (f->type) {
  case FL_INT:
    snprintf(buf, len, "%ld", *(const long *)(const void *)p);
    break;
  case FL_REAL:
    for (int prec = 15; prec <= 17; prec++) {
      snprintf(buf, len, "%.*g", prec, *(const double *)(const void *)p);
      if (strtod(buf, NULL) == *(const double *)(const void *)p)
        break;
    }
    break;
  case FL_CHOICE:
    snprintf(buf, len, "%s", f->choices[*(const int *)(const void *)p]);
    break;
  case FL_STR:
    snprintf(buf, len, "%s", p);
    break;
  case FL_BOOL:
    snprintf(buf, len, "%s", *(const bool *)(const void *)p ? "true" : "false");
    break;
  }
}

int fl_parse(const fl_table *t, unsigned cmd, const char *cmd_name, int argc,
             char **argv, void *cfg, bool *set) {
  for (int i = 0; i < t->n; i++) {
    set[i] = false;
    if (t->flags[i].def)
      fl_set(&t->flags[i], cfg, t->flags[i].def);
  }
  const char *prog = t->prog;
  char buf[160];
  for (int a = 1; a < argc; a++) {
    const char *arg = argv[a];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
      return 1;
    if (strncmp(arg, "--", 2) != 0)
      return tg_error_set("%s %s: unexpected argument '%s' (flags start with "
                          "--; %s %s --help lists them)",
                          prog, cmd_name, arg, prog, cmd_name);
    const char *name = arg + 2, *eq = strchr(name, '=');
    int i = fl_find(t, name, eq ? (size_t)(eq - name) : strlen(name));
    if (i < 0 || !(t->flags[i].cmds & (1u << cmd)))
      return tg_error_set(
          "%s %s: unknown flag %.*s (%s %s --help lists the flags)", prog,
          cmd_name, (int)(eq ? eq - arg : (long)strlen(arg)), arg, prog,
          cmd_name);
    const fl_flag *f = &t->flags[i];
    const char *value = eq ? eq + 1 : NULL;
    if (f->type == FL_BOOL && !value)
      value = "true";
    if (!value) {
      if (a + 1 >= argc)
        return tg_error_set("%s %s: --%s needs a value: %s", prog, cmd_name,
                            f->name, fl_allowed(f, buf, sizeof buf));
      value = argv[++a];
    }
    if (fl_set(f, cfg, value) != 0)
      return tg_error_set("%s %s: --%s '%s' is not allowed: expected %s", prog,
                          cmd_name, f->name, value,
                          fl_allowed(f, buf, sizeof buf));
    set[i] = true;
  }
  return 0;
}

/* ---- --help ------------------------------------------------------------- */

#define HELP_COL 30    /* where a flag's text starts */
#define HELP_WIDTH 100 /* no help line is longer */

/* "  --name VALUE   text", the text word-wrapped at HELP_WIDTH and starting
 * on the next line when the flag reaches into its column. */
static void print_flag(FILE *f, const char *left, const char *text) {
  int col = fprintf(f, "  %s", left);
  if (col >= HELP_COL) {
    fputc('\n', f);
    col = 0;
  }
  while (*text) {
    int w = (int)strcspn(text, " ");
    if (col > HELP_COL && col + 1 + w > HELP_WIDTH) {
      fputc('\n', f);
      col = 0;
    }
    col += col < HELP_COL ? fprintf(f, "%*s", HELP_COL - col, "")
                          : fprintf(f, " ");
    col += fprintf(f, "%.*s", w, text);
    text += w;
    text += strspn(text, " ");
  }
  fputc('\n', f);
}

static void flag_help(const fl_flag *f, unsigned cmd, fl_help_override override,
                      const char **group, const char **help) {
  *group = f->group ? f->group : "flags";
  *help = f->help;
  if (override)
    override(f, cmd, group, help);
}

void fl_print_help(FILE *out, const fl_table *t, unsigned cmd,
                   unsigned from_model, fl_help_override override) {
  const char *groups[t->n > 0 ? t->n : 1];
  int n_groups = 0;
  for (int i = 0; i < t->n; i++) {
    const char *group, *help;
    if (!(t->flags[i].cmds & (1u << cmd)))
      continue;
    flag_help(&t->flags[i], cmd, override, &group, &help);
    int g = 0;
    while (g < n_groups && strcmp(groups[g], group) != 0)
      g++;
    if (g == n_groups)
      groups[n_groups++] = group;
  }
  char value[128], left[160], text[320];
  for (int g = 0; g < n_groups; g++) {
    fprintf(out, "\n%s:\n", groups[g]);
    for (int i = 0; i < t->n; i++) {
      const fl_flag *f = &t->flags[i];
      const char *group, *help;
      if (!(f->cmds & (1u << cmd)))
        continue;
      flag_help(f, cmd, override, &group, &help);
      if (strcmp(group, groups[g]) != 0)
        continue;
      if (f->type == FL_CHOICE) {
        size_t n = 0;
        for (int k = 0; f->choices[k]; k++)
          n += (size_t)snprintf(value + n, sizeof value - n, "%s%s",
                                k ? "|" : "", f->choices[k]);
      } else {
        snprintf(value, sizeof value, "%s", f->metavar ? f->metavar : "");
      }
      snprintf(left, sizeof left, "--%s %s", f->name, value);
      if (f->meta & from_model)
        snprintf(text, sizeof text, "%s [the model's]", help);
      else if (f->type != FL_BOOL && f->def && f->def[0])
        snprintf(text, sizeof text, "%s [%s]", help, f->def);
      else
        snprintf(text, sizeof text, "%s", help);
      print_flag(out, left, text);
    }
  }
  fputc('\n', out);
  print_flag(out, "--help", "this text");
}

/* ---- metadata ----------------------------------------------------------- */

/* "d-model" -> "d_model" */
static void meta_key(const fl_flag *f, char *key, size_t len) {
  snprintf(key, len, "%s", f->name);
  for (char *s = key; *s; s++)
    if (*s == '-')
      *s = '_';
}

/* Long enough for any field: the longest string field of the programs. */
#define FL_VALUE_MAX 8192

int fl_to_meta(const fl_table *t, const void *cfg, unsigned mask,
               fl_meta_put put, void *ctx) {
  char key[64], value[FL_VALUE_MAX];
  for (int i = 0; i < t->n; i++) {
    if (!(t->flags[i].meta & mask))
      continue;
    meta_key(&t->flags[i], key, sizeof key);
    fl_get(&t->flags[i], cfg, value, sizeof value);
    if (put(ctx, key, value) != 0)
      return -1;
  }
  return 0;
}

int fl_from_meta(const fl_table *t, void *cfg, size_t cfg_size, const bool *set,
                 unsigned mask, unsigned must_match, fl_meta_get get, void *ctx,
                 const char *what) {
  char mine[FL_VALUE_MAX], theirs[FL_VALUE_MAX];
  char key[64], buf[160];
  void *file = malloc(cfg_size);
  if (!file)
    return tg_error_set("%s: out of memory reading its metadata", what);
  memcpy(file, cfg, cfg_size);
  int rc = 0;
  for (int i = 0; i < t->n && rc == 0; i++) {
    const fl_flag *f = &t->flags[i];
    if (!(f->meta & mask))
      continue;
    meta_key(f, key, sizeof key);
    const char *v = get(ctx, key);
    if (!v && (f->meta & FL_META_LATER))
      v = f->def;
    if (!v) {
      rc = tg_error_set(
          "%s: the metadata has no '%s' (not written by %s train?)", what, key,
          t->prog);
    } else if (fl_set(f, file, v) != 0) {
      rc = tg_error_set(
          "%s: metadata '%s' = '%.64s' is not allowed: expected %s", what, key,
          v, fl_allowed(f, buf, sizeof buf));
    } else if (set[i]) {
      fl_get(f, cfg, mine, sizeof mine);
      fl_get(f, file, theirs, sizeof theirs);
      if ((f->meta & must_match) && strcmp(mine, theirs) != 0)
        rc = tg_error_set("--%s %s differs from %s's %s (a model's shape and "
                          "task cannot change)",
                          f->name, mine, what, theirs);
      else
        fl_set(f, file, mine); /* the command line wins */
    }
  }
  if (rc == 0)
    memcpy(cfg, file, cfg_size);
  free(file);
  return rc;
}
