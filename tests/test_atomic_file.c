/* Atomic writes: a save removes the temporaries that killed writers left in its
 * directory, and only those. */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct_test.h"

static void touch(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
}

static bool exists(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The id of a process that has exited (and been reaped). */
static long dead_pid(void) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0);
    return (long)child;
}

TEST(save_removes_temporaries_of_dead_writers) {
    char dir[] = "/tmp/ct_atomic_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char dead[64], dead_other[64], alive[64], own[64], not_ours[4][64];
    long gone = dead_pid();
    snprintf(dead, sizeof dead, "model.safetensors.tmp-%ld-0", gone);
    snprintf(dead_other, sizeof dead_other, "config.json.tmp-%ld-17", gone);
    snprintf(alive, sizeof alive, "model.safetensors.tmp-%ld-0", (long)getppid());
    snprintf(own, sizeof own, "other.safetensors.tmp-%ld-3", (long)getpid());
    snprintf(not_ours[0], 64, "notes.tmp-%ld", gone);        /* no counter */
    snprintf(not_ours[1], 64, "notes.tmp-%ld-1x", gone);     /* not digits */
    snprintf(not_ours[2], 64, ".tmp-%ld-1", gone);           /* no target name */
    snprintf(not_ours[3], 64, "notes.tmp-%ldx-1", gone);
    const char *names[] = {dead, dead_other, alive, own, not_ours[0], not_ours[1], not_ours[2],
                           not_ours[3]};
    for (int i = 0; i < 8; i++) touch(dir, names[i]);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/sub.tmp-%ld-2", dir, gone); /* a directory: kept */
    CHECK(mkdir(sub, 0755) == 0);

    ct_state_dict *sd = ct_state_dict_new();
    ct_state_dict_set(sd, "w", ct_ones(CT_SHAPE(2)));
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(ct_save_safetensors(sd, path, NULL) == 0);

    CHECK(!exists(dir, dead));
    CHECK(!exists(dir, dead_other));
    CHECK(exists(dir, alive));
    CHECK(exists(dir, own));
    for (int i = 0; i < 4; i++) CHECK(exists(dir, not_ours[i]));
    CHECK(access(sub, F_OK) == 0);
    CHECK(exists(dir, "model.safetensors"));

    for (int i = 2; i < 8; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(sub);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    CHECK(rmdir(dir) == 0);
}
