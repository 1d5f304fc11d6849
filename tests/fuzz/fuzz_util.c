/* What the harnesses share: input as a file, and walking a dataset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char dir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    ct_set_error_handler(NULL);
    return 0;
}

static void remove_dir(void) {
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", dir);
}

const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
    static char path[160];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%.40s/ct_fuzz_XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: writing the input");
        abort();
    }
    return path;
}

void fuzz_walk_dataset(ct_dataset *ds) {
    int64_t n = ct_dataset_len(ds);
    for (int64_t i = 0; i < n && i < 64; i++) CT_SCOPE {
        ct_sample s = {0};
        ct_dataset_get(ds, i, &s);
    }
}
