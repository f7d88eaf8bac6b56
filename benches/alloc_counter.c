/*
 * alloc_counter: an LD_PRELOAD library that counts heap allocations of a whole process, so
 * Rust allocations (the system allocator calls malloc) and libzmq's C++ ones (operator new
 * calls malloc) are counted the same way.
 *
 * Every allocation entry point of glibc is wrapped and forwarded to glibc's own __libc_*
 * functions.  At exit the totals are written to the file named by OMQ_BENCH_ALLOC_OUT:
 *
 *     allocs N      malloc + calloc + realloc + the aligned allocators
 *     frees N       free calls with a non-null pointer
 *     bytes N       bytes requested by those allocations
 *
 * The harness runs a cell twice with different message counts and divides the difference by
 * the difference in messages, so setup and teardown cancel out.
 *
 * Build: gcc -O2 -shared -fPIC -o libomq_bench_alloc.so alloc_counter.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static unsigned long long n_allocs, n_frees, n_bytes;

static inline void count(size_t size)
{
    __atomic_fetch_add(&n_allocs, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&n_bytes, size, __ATOMIC_RELAXED);
}

void *malloc(size_t size)
{
    count(size);
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    count(n * size);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    count(size);
    return __libc_realloc(p, size);
}

void free(void *p)
{
    if (p)
        __atomic_fetch_add(&n_frees, 1, __ATOMIC_RELAXED);
    __libc_free(p);
}

void *memalign(size_t align, size_t size)
{
    count(size);
    return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    count(size);
    return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    void *p;
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    count(size);
    p = __libc_memalign(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    count(size);
    return __libc_memalign(4096, size);
}

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("OMQ_BENCH_ALLOC_OUT");
    FILE *f;
    if (!path)
        return;
    f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "allocs %llu\nfrees %llu\nbytes %llu\n",
            __atomic_load_n(&n_allocs, __ATOMIC_RELAXED),
            __atomic_load_n(&n_frees, __ATOMIC_RELAXED),
            __atomic_load_n(&n_bytes, __ATOMIC_RELAXED));
    fclose(f);
}
