/* A command line as one table: a row per flag gives its name, type, allowed
 * values, default, help line, the commands that take it and the metadata
 * group it is saved in. Parsing, --help, and a configuration to and from
 * safetensors metadata (a flag "--d-model" is the key "d_model", its value
 * as on the command line) all read the same rows, so a model file records
 * exactly what the command line would have said and reading it back checks
 * every value as the command line does. seqtask, charlm and cnn share it.
 *
 * A row points into the program's configuration struct by offset; the
 * program keeps `bool set[n]`, which flags the command line gave.
 */
#ifndef SEQTASK_FLAGS_H
#define SEQTASK_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { FL_INT, FL_REAL, FL_CHOICE, FL_STR, FL_BOOL } fl_type;

/* A metadata group bit a program may add to its own: the key is absent from
 * files written before the flag existed, whose value is then the default. */
#define FL_META_LATER 0x100u

typedef struct fl_flag {
  const char *name; /* without "--" */
  fl_type type;
  size_t off, size;      /* field of the configuration (long, double, int,
                            char[size], bool) */
  double lo, hi;         /* FL_INT / FL_REAL range */
  bool lo_open, hi_open; /* FL_REAL: exclusive bounds */
  const char *const
      *choices;        /* FL_CHOICE, NULL-terminated; the field is the index */
  const char *def;     /* default, parsed like a command-line value */
  unsigned cmds, meta; /* bit c: command c takes it; metadata groups */
  const char *group, *metavar, *help;
} fl_flag;

/* The row makers: cfg is the configuration's type, f its field. */
#define FL_OFF(cfg, f) offsetof(cfg, f)
#define FL_INT_(cfg, n, f, lo, hi, def, cmds, meta, grp, mv, help)             \
  {                                                                            \
    n, FL_INT, FL_OFF(cfg, f), 0, lo, hi, false, false, NULL, def, cmds, meta, \
        grp, mv, help                                                          \
  }
#define FL_REAL_(cfg, n, f, lo, lo_open, hi, hi_open, def, cmds, meta, grp,    \
                 mv, help)                                                     \
  {                                                                            \
    n, FL_REAL, FL_OFF(cfg, f), 0, lo, hi, lo_open, hi_open, NULL, def, cmds,  \
        meta, grp, mv, help                                                    \
  }
#define FL_CHOICE_(cfg, n, f, ch, def, cmds, meta, grp, help)                  \
  {                                                                            \
    n, FL_CHOICE, FL_OFF(cfg, f), 0, 0, 0, false, false, ch, def, cmds, meta,  \
        grp, NULL, help                                                        \
  }
#define FL_STR_(cfg, n, f, def, cmds, meta, grp, mv, help)                     \
  {                                                                            \
    n, FL_STR, FL_OFF(cfg, f), sizeof(((cfg *)0)->f), 0, 0, false, false,      \
        NULL, def, cmds, meta, grp, mv, help                                   \
  }
#define FL_BOOL_(cfg, n, f, cmds, meta, grp, help)                             \
  {                                                                            \
    n, FL_BOOL, FL_OFF(cfg, f), 0, 0, 0, false, false, NULL, "false", cmds,    \
        meta, grp, NULL, help                                                  \
  }

typedef struct fl_table {
  const char *prog; /* "seqtask": errors read "seqtask train: ..." */
  const fl_flag *flags;
  int n;
} fl_table;

/* The row of flag `name` (len bytes, without "--"), or -1. */
int fl_find(const fl_table *t, const char *name, size_t len);
/* "an integer in [1, 64]", "one of fused, per-head", ... into buf. */
const char *fl_allowed(const fl_flag *f, char *buf, size_t len);
/* Stores value into cfg's field; -1 (nothing stored) when it is not allowed. */
int fl_set(const fl_flag *f, void *cfg, const char *value);
/* The field as text, the inverse of fl_set (reals: the shortest text that
 * reads back as the same double). */
void fl_get(const fl_flag *f, const void *cfg, char *buf, size_t len);

/* Sets every default, then the flags of argv[1..argc) (`--name value`,
 * `--name=value`, a bare `--name` for a bool) that command `cmd` (called
 * `cmd_name`) takes, marking them in set[]. 0; 1 when argv asks for --help
 * (nothing printed); -1 with a message in tg_error() naming the command, the
 * flag, the value and what is allowed. */
int fl_parse(const fl_table *t, unsigned cmd, const char *cmd_name, int argc,
             char **argv, void *cfg, bool *set);

/* A flag's group and help line for a command, when they differ from the row's.
 */
typedef void (*fl_help_override)(const fl_flag *f, unsigned cmd,
                                 const char **group, const char **help);
/* The flags command cmd takes, group by group (groups in the order the table
 * first uses them), "--name VALUE  help [default]", word-wrapped; a flag
 * whose meta has a bit of `from_model` says "[the model's]" instead of its
 * default. override may be NULL. */
void fl_print_help(FILE *out, const fl_table *t, unsigned cmd,
                   unsigned from_model, fl_help_override override);

/* Metadata: put(ctx, key, value) for every flag of the groups in mask. */
typedef int (*fl_meta_put)(void *ctx, const char *key, const char *value);
int fl_to_meta(const fl_table *t, const void *cfg, unsigned mask,
               fl_meta_put put, void *ctx);
/* Reads the flags of the groups in mask through get(ctx, key) (NULL when
 * absent: an error naming the file `what`, unless the row is FL_META_LATER).
 * Flags the command line set (set[]) keep their values, except that for a
 * flag of a group in must_match the two values must agree. cfg (of
 * cfg_size bytes) is written only on success. 0, or -1 with a message. */
typedef const char *(*fl_meta_get)(void *ctx, const char *key);
int fl_from_meta(const fl_table *t, void *cfg, size_t cfg_size, const bool *set,
                 unsigned mask, unsigned must_match, fl_meta_get get, void *ctx,
                 const char *what);

#endif
