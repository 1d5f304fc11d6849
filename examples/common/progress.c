#include "progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define REFRESH_SECONDS 0.2
#define SMOOTHING 0.3

double progress_clock(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int terminal_width(int fd) {
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    long c = columns ? strtol(columns, NULL, 10) : 0;
    return c > 0 && c < 10000 ? (int)c : 80;
}

void progress_format_time(char *buf, size_t size, double seconds) {
    long s = isfinite(seconds) && seconds > 0 ? (long)(seconds > 3.6e8 ? 3.6e8 : seconds) : 0;
    if (s >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, size, "%02ld:%02ld", s / 60, s % 60);
}

static void draw(progress_bar *p, double t);

void progress_start(progress_bar *p, const char *desc, int64_t total, int64_t done,
                    const char *unit) {
    memset(p, 0, sizeof *p);
    p->out = stderr;
    p->tty = isatty(fileno(p->out));
    snprintf(p->desc, sizeof p->desc, "%s", desc);
    p->unit = unit;
    p->total = total;
    p->done = p->done_at_last_draw = done;
    p->start = p->last_draw = progress_clock();
    p->plain_fifths = total > 0 ? (int)(5 * done / total) : 0;
    if (p->tty) draw(p, p->start);
}

/* The line without its bar: "desc: 45%|", "| 27/60 [00:12<00:15, 2145 samples/s, loss=..]". */
static void draw(progress_bar *p, double t) {
    char elapsed[32], eta[32], rate[32], head[96], tail[256];
    progress_format_time(elapsed, sizeof elapsed, t - p->start);
    if (p->rate > 0) {
        progress_format_time(eta, sizeof eta, (double)(p->total - p->done) / p->rate);
        int decimals = p->rate >= 100 ? 0 : p->rate >= 10 ? 1 : 2; /* 3 significant digits */
        snprintf(rate, sizeof rate, "%.*f %s/s", decimals, p->rate, p->unit);
    } else {
        snprintf(eta, sizeof eta, "?");
        snprintf(rate, sizeof rate, "? %s/s", p->unit);
    }
    int percent = p->total > 0 ? (int)(100 * p->done / p->total) : 100;
    snprintf(head, sizeof head, "%s: %3d%%", p->desc, percent);
    snprintf(tail, sizeof tail, " %lld/%lld [%s<%s, %s%s%s]", (long long)p->done,
             (long long)p->total, elapsed, eta, rate, p->postfix[0] ? ", " : "", p->postfix);
    p->drawn = true;
    if (!p->tty) {
        fprintf(p->out, "%s%s\n", head, tail);
        fflush(p->out);
        return;
    }
    /* The bar takes what the terminal's width leaves (one column spare, so the cursor
     * never wraps); on a narrow terminal the text is cut instead. */
    int width = terminal_width(fileno(p->out)) - 1;
    int bar = width - (int)strlen(head) - (int)strlen(tail) - 2;
    char line[1024];
    if (bar >= 4) {
        int filled = p->total > 0 ? (int)((int64_t)bar * p->done / p->total) : bar;
        char cells[512];
        if (bar > (int)sizeof cells - 1) bar = (int)sizeof cells - 1;
        if (filled > bar) filled = bar;
        memset(cells, '#', (size_t)filled);
        memset(cells + filled, ' ', (size_t)(bar - filled));
        cells[bar] = 0;
        snprintf(line, sizeof line, "%s|%s|%s", head, cells, tail);
    } else {
        snprintf(line, sizeof line, "%s%s", head, tail);
        if (width > 0 && width < (int)sizeof line) line[width] = 0;
    }
    fprintf(p->out, "\r%s\033[K", line);
    fflush(p->out);
}

/* Folds the rate since the last draw into the smoothed rate. */
static void measure(progress_bar *p, double t) {
    double dt = t - p->last_draw;
    if (dt > 0 && p->done > p->done_at_last_draw) {
        double recent = (double)(p->done - p->done_at_last_draw) / dt;
        p->rate = p->rate > 0 ? SMOOTHING * recent + (1 - SMOOTHING) * p->rate : recent;
    }
    p->last_draw = t;
    p->done_at_last_draw = p->done;
}

void progress_update(progress_bar *p, int64_t n, const char *postfix) {
    if (p->closed) return;
    p->done += n;
    if (postfix) snprintf(p->postfix, sizeof p->postfix, "%s", postfix);
    double t = progress_clock(), dt = t - p->last_draw;
    if (p->tty) {
        if (dt < REFRESH_SECONDS) return;
    } else {
        int fifths = p->total > 0 ? (int)(5 * p->done / p->total) : 0;
        /* the last fifth is the final line, which progress_close writes */
        if (fifths <= p->plain_fifths || p->done >= p->total) return;
        p->plain_fifths = fifths;
    }
    measure(p, t);
    draw(p, t);
}

void progress_close(progress_bar *p) {
    if (p->closed) return;
    p->closed = true;
    /* a plain line already showing the final state is not written twice */
    if (!p->tty && p->drawn && p->done == p->done_at_last_draw) return;
    double t = progress_clock();
    measure(p, t);
    draw(p, t);
    if (p->tty) {
        fputc('\n', p->out);
        fflush(p->out);
    }
}
