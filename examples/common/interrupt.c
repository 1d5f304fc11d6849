#include "interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupts, quiet;

/* Only async-signal-safe calls here: write and _exit. */
static void on_sigint(int sig) {
    (void)sig;
    if (interrupts++ == 0) {
        if (quiet) return;
        static const char msg[] =
            "\ninterrupted: finishing the current batch to save a checkpoint (Ctrl-C again to "
            "quit without saving)\n";
        ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)ignored;
        return;
    }
    static const char msg[] = "\ninterrupted again: quitting without saving\n";
    if (!quiet) {
        ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)ignored;
    }
    _exit(INTERRUPT_EXIT_STATUS);
}

static void catch_signal(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* reads and waits in progress go on */
    sigaction(sig, &sa, NULL);
}

void interrupt_install(void) { catch_signal(SIGINT); }

void interrupt_install_launcher_signals(bool quiet_rank) {
    quiet = quiet_rank;
    catch_signal(SIGTERM);
    catch_signal(SIGUSR1);
}

bool interrupt_requested(void) { return interrupts > 0; }
