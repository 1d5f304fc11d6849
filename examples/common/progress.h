/* A progress bar on stderr in the manner of tqdm:
 *
 *     epoch 1/3:  45%|#########           | 27008/60000 [00:12<00:15, 2145 samples/s, loss=0.4321]
 *
 * On a terminal the line is redrawn in place ("\r", then erase to the end of the
 * line) at most every 0.2 s, fitted to the terminal's width (TIOCGWINSZ, else
 * $COLUMNS, else 80 columns).  The rate is an exponential moving average of the
 * recent rates (tqdm's smoothing 0.3) and the ETA the remaining units at that rate.
 * Elsewhere (a log file, a pipe) it writes plain lines instead: one each time another
 * fifth of the total is done, and the final state once. */
#ifndef CT_EXAMPLES_PROGRESS_H
#define CT_EXAMPLES_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE *out;
    bool tty;
    char desc[64];
    const char *unit;
    int64_t total, done;
    double start, last_draw;
    int64_t done_at_last_draw;
    double rate;         /* smoothed units per second, 0 until the first measurement */
    int plain_fifths;    /* plain lines: fifths of the total already reported */
    bool drawn, closed;
    char postfix[96];
} progress_bar;

/* Starts a bar for total units (samples, batches) described by desc ("epoch 1/3"),
 * already done of which are done (a resumed epoch).  The bar writes to stderr. */
void progress_start(progress_bar *p, const char *desc, int64_t total, int64_t done,
                    const char *unit);
/* n more units are done; postfix (e.g. "loss=0.4321", may be NULL) ends the line. */
void progress_update(progress_bar *p, int64_t n, const char *postfix);
/* Draws the final state once (ending the terminal line); later calls do nothing. */
void progress_close(progress_bar *p);

/* Seconds on a monotonic clock. */
double progress_clock(void);

/* Formats seconds as mm:ss or h:mm:ss into buf. */
void progress_format_time(char *buf, size_t size, double seconds);

#endif
