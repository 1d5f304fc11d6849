/* Command-line flags for the example programs: one table per program, parsed with
 * getopt_long, so `--epochs 3` and `--epochs=3` both work.  Numbers are checked
 * whole (strtol/strtod: no trailing characters, no overflow) and against the
 * option's range; a bad value is an error naming the flag and the value.  --help
 * prints the summary and every flag with its meaning and default to stdout. */
#ifndef CT_EXAMPLES_CLI_OPTIONS_H
#define CT_EXAMPLES_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { CLI_FLAG, CLI_INT, CLI_INT64, CLI_UINT64, CLI_DOUBLE, CLI_STRING } cli_kind;

typedef struct {
    const char *name;  /* the long name without its dashes: "batch-size" */
    cli_kind kind;
    void *value;       /* bool, int, int64_t, uint64_t, double or const char *; holds the default */
    const char *meta;  /* the value's name in --help ("N", "DIR"); unused for flags */
    const char *help;  /* what the flag does */
    double min, max;   /* numbers outside [min, max] are refused */
    bool given;        /* set by cli_parse: the flag was on the command line */
} cli_option;

#define CLI_OPT_FLAG(name, ptr, help) {name, CLI_FLAG, ptr, NULL, help, 0, 0, false}
#define CLI_OPT_INT(name, ptr, lo, hi, meta, help) {name, CLI_INT, ptr, meta, help, lo, hi, false}
#define CLI_OPT_INT64(name, ptr, lo, hi, meta, help) {name, CLI_INT64, ptr, meta, help, lo, hi, false}
#define CLI_OPT_UINT64(name, ptr, meta, help) \
    {name, CLI_UINT64, ptr, meta, help, 0, 18446744073709551615.0, false}
#define CLI_OPT_DOUBLE(name, ptr, lo, hi, meta, help) {name, CLI_DOUBLE, ptr, meta, help, lo, hi, false}
#define CLI_OPT_STRING(name, ptr, meta, help) {name, CLI_STRING, ptr, meta, help, 0, 0, false}

/* Parses argv into the options' values.  Returns true to go on, or false with the
 * status the program should exit with at once in *status: 0 after --help, 2 after a
 * usage error (printed to stderr).  summary is --help's first paragraph. */
bool cli_parse(int argc, char **argv, const char *summary, cli_option *opts, int n, int *status);

/* Parses one value for opt as cli_parse does (0, or -1 with a message on stderr naming
 * prog, the flag and the value). */
int cli_parse_value(const char *prog, cli_option *opt, const char *text);

/* Writes opt's current value into buf as text that cli_parse_value reads back to
 * the same value ("%.17g" for doubles); an empty string for a flag or unset string. */
void cli_format_value(const cli_option *opt, char *buf, size_t size);

/* The option named name in opts (NULL when there is none). */
cli_option *cli_find(cli_option *opts, int n, const char *name);

#endif
