/* Support of the documentation examples: setup and printed-value checks. */
#include "doc_example.h"

/* Weak, so that examples link while ct_to_string is not in the library yet (the
 * check is then skipped with a note); the library's definition is used when it is. */
extern char *(ct_to_string)(const ct_tensor *t) __attribute__((weak));
#undef ct_print
extern void (ct_print)(const ct_tensor *t) __attribute__((weak));

static int failures;

void ct_doc_setup(void) { ct_set_error_handler(ct_abort_on_error); }

void ct_doc_expect(const ct_tensor *t, const char *want) {
    if (!ct_to_string) {
        printf("(ct_to_string is not in this build: not checked) expected %s\n", want);
        return;
    }
    char *got = ct_to_string(t);
    printf("%s\n", got ? got : "(null)");
    if (!got || strcmp(got, want)) {
        fprintf(stderr, "printed %s, the documentation says %s\n", got ? got : "(null)", want);
        failures++;
    }
    free(got);
}

void ct_doc_print(const ct_tensor *t) {
    if (ct_print) ct_print(t);
    else printf("(ct_print is not in this build)\n");
}

int ct_doc_finish(void) { return failures ? 1 : 0; }
