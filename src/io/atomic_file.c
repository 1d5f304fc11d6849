#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctorch/base.h"
#include "core/error.h"
#include "io/atomic_file.h"

/* The writer's process id when name is a temporary of ours ("<target>.tmp-<pid>-<n>"),
 * else 0. */
static long temporary_owner(const char *name) {
    const char *tag = NULL;
    for (const char *s = strstr(name, ".tmp-"); s; s = strstr(s + 1, ".tmp-")) tag = s;
    if (!tag || tag == name) return 0;
    const char *p = tag + 5;
    size_t pid_digits = strspn(p, "0123456789");
    if (pid_digits == 0 || pid_digits > 9 || p[pid_digits] != '-') return 0;
    const char *n = p + pid_digits + 1;
    size_t n_digits = strspn(n, "0123456789");
    if (n_digits == 0 || n[n_digits]) return 0;
    return strtol(p, NULL, 10);
}

/* Removes the temporaries in path's directory that writers killed mid-write left
 * behind: those whose process no longer exists (a live process, or one of another
 * user, keeps its files).  Best effort: a failure only leaves the files there. */
static void remove_stale_temporaries(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    const char *d = dirname(dir);
    DIR *dh = opendir(d);
    if (!dh) return;
    long self = (long)getpid();
    struct dirent *e;
    while ((e = readdir(dh))) {
        long pid = temporary_owner(e->d_name);
        if (pid <= 0 || pid == self || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char file[8192];
        struct stat st;
        if (snprintf(file, sizeof file, "%s/%s", d, e->d_name) < (int)sizeof file &&
            lstat(file, &st) == 0 && S_ISREG(st.st_mode))
            unlink(file);
    }
    closedir(dh);
}

int ct_atomic_open(ct_atomic_file *af, const char *path, const char *op) {
    memset(af, 0, sizeof *af);
    af->op = op;
    if (snprintf(af->path, sizeof af->path, "%s", path) >= (int)sizeof af->path) {
        ct_error("%s: path too long", op);
        return -1;
    }
    remove_stale_temporaries(path);
    /* A name unique to this process and call, created exclusively with mode 0666 so
     * the umask applies as to any file the user writes (mkstemp would make it 0600). */
    static atomic_uint counter;
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        if (snprintf(af->tmp, sizeof af->tmp, "%s.tmp-%ld-%u", path, (long)getpid(),
                     atomic_fetch_add(&counter, 1)) >= (int)sizeof af->tmp) {
            ct_error("%s: path too long", op);
            return -1;
        }
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0 || !(af->f = fdopen(fd, "wb"))) {
        ct_error("%s: cannot create %s: %s", op, af->tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(af->tmp);
        }
        return -1;
    }
    return 0;
}

bool ct_atomic_write(ct_atomic_file *af, const void *data, size_t n) {
    return n == 0 || fwrite(data, 1, n, af->f) == n;
}

int ct_atomic_commit(ct_atomic_file *af, bool ok) {
    int err = 0;
    if (ok && (fflush(af->f) != 0 || fsync(fileno(af->f)) != 0)) {
        ok = false;
        err = errno;
    }
    if (fclose(af->f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(af->tmp, af->path) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(af->tmp);
        if (!ct_last_error() || err)
            ct_error("%s: writing %s failed: %s", af->op, af->path, err ? strerror(err) : "write error");
        return -1;
    }
    /* Make the rename itself durable. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", af->path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}
