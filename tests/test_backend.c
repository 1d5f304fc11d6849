/* Backends: the registry, the cpu backend's members, and the error for a device with
 * no backend in this build. */
#include <stdint.h>

#include "ct_test.h"
#include "core/backend.h"
#include "core/tensor_impl.h"

static void no_copy(ct_tensor *dst, const ct_tensor *src) { (void)dst, (void)src; }

TEST(cpu_backend_is_registered) {
    const ct_backend *b = ct_backend_of("test", CT_CPU);
    CHECK(b != NULL);
    CHECK_STR_EQ(b->name, "cpu");
    CHECK_INT_EQ(b->type, CT_DEV_CPU);
    CHECK(b->kernel_tables[0] != NULL);
    CHECK(ct_backend_for_type(CT_DEV_CPU) == b);
    CHECK(ct_device_synchronize("test", CT_CPU));
}

TEST(device_without_backend) {
    CHECK(ct_backend_for_type(CT_DEV_CUDA) == NULL);
    CHECK_ERROR(ct_backend_of("ct_zeros", CT_CUDA(0)),
                "ct_zeros: no backend for device cuda:0 in this build of ctorch");
    CHECK_ERROR(ct_device_synchronize("ct_synchronize", CT_CUDA(1)) ? 1 : 0,
                "ct_synchronize: no backend for device cuda:1 in this build of ctorch");
    CHECK_ERROR(ct_empty(CT_SHAPE(2), .device = CT_CUDA(0)), "no backend for device cuda:0");
    CHECK_INT_EQ(ct_memory_reserved(CT_CUDA(0)), 0);
}

TEST(register_refuses_a_second_or_incomplete_backend) {
    const ct_backend *cpu = ct_backend_of("test", CT_CPU);
    ct_backend again = *cpu;
    again.name = "cpu2";
    CHECK_ERROR(ct_backend_register(&again) ? 1 : 0,
                "backend cpu2: its device type has backend cpu already");
    ct_backend partial = {.name = "half", .type = CT_DEV_CUDA, .copy = no_copy};
    CHECK_ERROR(ct_backend_register(&partial) ? 1 : 0,
                "backend half lacks a required member or has an invalid device type");
    CHECK(ct_backend_for_type(CT_DEV_CUDA) == NULL);
}

TEST(cpu_alloc_is_aligned_and_counted_by_the_core) {
    const ct_backend *b = ct_backend_of("test", CT_CPU);
    void *p = b->alloc(CT_CPU, 1000);
    CHECK(p != NULL);
    CHECK_INT_EQ((uintptr_t)p % 64, 0);
    b->free(CT_CPU, p, 1000);
    int64_t before = ct_memory_allocated(CT_CPU);
    ct_tensor *t = ct_empty(CT_SHAPE(1 << 16));
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU) - before, 4 << 16);
    CHECK(ct_memory_reserved(CT_CPU) >= ct_memory_allocated(CT_CPU));
    CHECK(t != NULL);
}

TEST(cpu_copy_between_strides_and_dtypes) {
    const ct_backend *b = ct_backend_of("test", CT_CPU);
    ct_tensor *src = ct_transpose(ct_reshape(ct_arange(6, .dtype = CT_F64), CT_SHAPE(2, 3)),
                                  0, 1);
    ct_tensor *dst = ct_empty(CT_SHAPE(3, 2), .dtype = CT_I32);
    b->copy(dst, src);
    CHECK_VALUES(dst, 0, 0, 3, 1, 4, 2, 5);
    float v[] = {7, 8};
    ct_tensor *row = ct_tensor_f32(v, CT_SHAPE(2));
    ct_tensor *wide = ct_empty(CT_SHAPE(3, 2), .dtype = CT_F64);
    b->copy(wide, row); /* src broadcast along dim 0 */
    CHECK_VALUES(wide, 0, 7, 8, 7, 8, 7, 8);
}

TEST(cpu_fill_sets_strided_elements_of_any_dtype) {
    const ct_backend *b = ct_backend_of("test", CT_CPU);
    ct_tensor *t = ct_zeros(CT_SHAPE(3, 4), .dtype = CT_I16);
    int16_t v = -7;
    b->fill(ct_select(t, 1, 2), &v); /* column 2: a stride of 4 elements */
    CHECK_VALUES(t, 0, 0, 0, -7, 0, 0, 0, -7, 0, 0, 0, -7, 0);
    ct_tensor *d = ct_zeros(CT_SHAPE(2, 3), .dtype = CT_F64);
    double x = 2.5;
    b->fill(ct_t(d), &x);
    CHECK_VALUES(d, 0, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5);
    ct_tensor *h = ct_empty(CT_SHAPE(5), .dtype = CT_BF16);
    ct_bf16 one_and_half = ct_float_to_bf16(1.5f);
    b->fill(h, &one_and_half);
    CHECK_VALUES(h, 0, 1.5, 1.5, 1.5, 1.5, 1.5);
    ct_tensor *big = ct_empty(CT_SHAPE(2), .dtype = CT_I64);
    int64_t k = ((int64_t)1 << 62) + 1; /* not a double: the bits go in as given */
    b->fill(big, &k);
    CHECK(((const int64_t *)ct_tensor_data(big))[1] == k);
    ct_tensor *mask = ct_zeros(CT_SHAPE(3), .dtype = CT_BOOL);
    bool yes = true;
    b->fill(ct_slice(mask, 0, 0, 3, 2), &yes);
    CHECK_VALUES(mask, 0, 1, 0, 1);
}

/* Factories that start from zeros fill through the backend: memory the block cache
 * hands out again still holds its old values until then. */
TEST(zeros_and_eye_overwrite_reused_memory) {
    CT_SCOPE { ct_full(CT_SHAPE(64, 64), 9); }
    CHECK(ct_item(ct_sum(ct_zeros(CT_SHAPE(64, 64)))) == 0);
    CT_SCOPE { ct_full(CT_SHAPE(16, 16), 9); }
    ct_tensor *e = ct_eye(16);
    CHECK(ct_item(ct_sum(e)) == 16);
    CHECK_VALUES(ct_eye_nm(2, 3), 0, 1, 0, 0, 0, 1, 0);
}
