#include "cli_options.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *program_name(const char *argv0) {
    const char *slash = strrchr(argv0, '/');
    return slash ? slash + 1 : argv0;
}

static int bad_value(const char *prog, const cli_option *o, const char *text, const char *why) {
    fprintf(stderr, "%s: --%s: '%s' %s (see --help)\n", prog, o->name, text, why);
    return -1;
}

/* The message for a value outside the option's range (integers printed as integers). */
static int out_of_range(const char *prog, const cli_option *o, const char *text) {
    char why[128];
    if (o->kind == CLI_DOUBLE)
        snprintf(why, sizeof why, "is out of range (expected %g to %g)", o->min, o->max);
    else if (o->kind == CLI_UINT64)
        snprintf(why, sizeof why, "is out of range (expected 0 to %" PRIu64 ")", UINT64_MAX);
    else
        snprintf(why, sizeof why, "is out of range (expected %.0f to %.0f)", o->min, o->max);
    return bad_value(prog, o, text, why);
}

int cli_parse_value(const char *prog, cli_option *o, const char *text) {
    char *end;
    errno = 0;
    switch (o->kind) {
    case CLI_FLAG:
        *(bool *)o->value = true;
        return 0;
    case CLI_STRING:
        if (!*text) return bad_value(prog, o, text, "is empty");
        *(const char **)o->value = text;
        return 0;
    case CLI_INT:
    case CLI_INT64: {
        long long v = strtoll(text, &end, 10);
        if (end == text || *end) return bad_value(prog, o, text, "is not an integer");
        if (errno == ERANGE || (double)v < o->min || (double)v > o->max ||
            (o->kind == CLI_INT && (v < INT_MIN || v > INT_MAX)))
            return out_of_range(prog, o, text);
        if (o->kind == CLI_INT)
            *(int *)o->value = (int)v;
        else
            *(int64_t *)o->value = v;
        return 0;
    }
    case CLI_UINT64: {
        /* strtoull accepts "-1" as 2^64 - 1: a sign is refused before it sees one */
        const char *digits = text + strspn(text, " \t");
        if (*digits == '-') return out_of_range(prog, o, text);
        unsigned long long v = strtoull(text, &end, 10);
        if (end == text || *end) return bad_value(prog, o, text, "is not an integer");
        if (errno == ERANGE) return out_of_range(prog, o, text);
        *(uint64_t *)o->value = v;
        return 0;
    }
    case CLI_DOUBLE: {
        double v = strtod(text, &end);
        if (end == text || *end) return bad_value(prog, o, text, "is not a number");
        if (errno == ERANGE || !isfinite(v) || v < o->min || v > o->max)
            return out_of_range(prog, o, text);
        *(double *)o->value = v;
        return 0;
    }
    }
    return -1;
}

cli_option *cli_find(cli_option *opts, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(opts[i].name, name)) return &opts[i];
    return NULL;
}

void cli_format_value(const cli_option *o, char *buf, size_t size) {
    buf[0] = 0;
    switch (o->kind) {
    case CLI_FLAG: break;
    case CLI_INT: snprintf(buf, size, "%d", *(const int *)o->value); break;
    case CLI_INT64: snprintf(buf, size, "%" PRId64, *(const int64_t *)o->value); break;
    case CLI_UINT64: snprintf(buf, size, "%" PRIu64, *(const uint64_t *)o->value); break;
    case CLI_DOUBLE: snprintf(buf, size, "%.17g", *(const double *)o->value); break;
    case CLI_STRING: {
        const char *s = *(const char *const *)o->value;
        if (s) snprintf(buf, size, "%s", s);
        break;
    }
    }
}

static void print_help(const char *prog, const char *summary, const cli_option *opts, int n) {
    printf("usage: %s [options]\n\n%s\n\noptions:\n", prog, summary);
    for (int i = 0; i < n; i++) {
        char flag[64];
        if (opts[i].kind == CLI_FLAG)
            snprintf(flag, sizeof flag, "--%s", opts[i].name);
        else
            snprintf(flag, sizeof flag, "--%s %s", opts[i].name, opts[i].meta);
        char value[64];
        if (opts[i].kind == CLI_DOUBLE)
            snprintf(value, sizeof value, "%g", *(const double *)opts[i].value);
        else
            cli_format_value(&opts[i], value, sizeof value);
        printf("  %-24s %s%s%s%s\n", flag, opts[i].help, value[0] ? " (default " : "", value,
               value[0] ? ")" : "");
    }
    printf("  %-24s %s\n", "-h, --help", "show this help and exit");
}

bool cli_parse(int argc, char **argv, const char *summary, cli_option *opts, int n, int *status) {
    const char *prog = program_name(argv[0]);
    struct option *longopts = calloc((size_t)n + 2, sizeof *longopts);
    *status = 1;
    if (!longopts) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return false;
    }
    for (int i = 0; i < n; i++)
        longopts[i] = (struct option){opts[i].name,
                                      opts[i].kind == CLI_FLAG ? no_argument : required_argument,
                                      NULL, 256 + i};
    longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    opterr = 0; /* the messages below name the program and point to --help */
    optind = 1;
    bool go_on = true;
    int c;
    *status = 0;
    while (go_on && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        go_on = false;
        *status = 2;
        if (c == 'h') {
            print_help(prog, summary, opts, n);
            *status = 0;
        } else if (c >= 256 && c < 256 + n) {
            cli_option *o = &opts[c - 256];
            o->given = true;
            go_on = cli_parse_value(prog, o, optarg) == 0;
        } else if (c == ':') {
            fprintf(stderr, "%s: %s needs a value (see --help)\n", prog, argv[optind - 1]);
        } else if (optopt >= 256 && optopt < 256 + n) {
            fprintf(stderr, "%s: --%s takes no value (see --help)\n", prog, opts[optopt - 256].name);
        } else if (optopt > 0 && optopt < 256) {
            fprintf(stderr, "%s: unknown option -%c (see --help)\n", prog, optopt);
        } else {
            fprintf(stderr, "%s: unknown option %s (see --help)\n", prog, argv[optind - 1]);
        }
        if (go_on) *status = 0;
    }
    if (go_on && optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, argv[optind]);
        *status = 2;
        go_on = false;
    }
    free(longopts);
    return go_on;
}
