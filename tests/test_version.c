/* The version of the headers and of the library (ctorch/version.h). */
#include <stdio.h>

#include "ct_test.h"

TEST(library_version_is_the_headers) {
    CHECK_STR_EQ(ct_version(), CTORCH_VERSION_STRING);
    char numbers[32];
    snprintf(numbers, sizeof numbers, "%d.%d.%d", CTORCH_VERSION_MAJOR, CTORCH_VERSION_MINOR,
             CTORCH_VERSION_PATCH);
    CHECK_STR_EQ(CTORCH_VERSION_STRING, numbers);
}

TEST(version_at_compares_major_minor_patch) {
    enum { MA = CTORCH_VERSION_MAJOR, MI = CTORCH_VERSION_MINOR, PA = CTORCH_VERSION_PATCH };
    CHECK(CTORCH_VERSION_AT(MA, MI, PA));
    CHECK(CTORCH_VERSION_AT(0, 0, 0));
    CHECK(!CTORCH_VERSION_AT(MA, MI, PA + 1));
    CHECK(!CTORCH_VERSION_AT(MA, MI + 1, 0));
    CHECK(!CTORCH_VERSION_AT(MA + 1, 0, 0));
    if (PA > 0) CHECK(CTORCH_VERSION_AT(MA, MI, PA - 1));
    if (MI > 0) CHECK(CTORCH_VERSION_AT(MA, MI - 1, 99));
    if (MA > 0) CHECK(CTORCH_VERSION_AT(MA - 1, 99, 99));
}
