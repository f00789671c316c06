#ifndef COURIER_CSANITIZERHOOKS_H
#define COURIER_CSANITIZERHOOKS_H

// Happens-before annotations for ThreadSanitizer, for synchronisation it cannot see.
//
// Synchronization.Mutex on Linux takes and hands over a contended lock in code TSan does not
// observe: the spin loop in `_MutexHandle._lockSlow` runs in the uninstrumented
// libswiftSynchronization.so, and FUTEX_LOCK_PI / FUTEX_UNLOCK_PI pass ownership inside the
// kernel. TSan then sees no release/acquire pair between two critical sections and reports
// the guarded value as raced. `LockedValue` calls these hooks right after taking the lock and
// right before releasing it, which is what TSan's own pthread_mutex interceptors do.
//
// The TSan runtime defines __tsan_acquire / __tsan_release; the weak references resolve to
// null in every other build, so outside ThreadSanitizer each hook is a test of a pointer the
// optimiser hoists out of loops, and no call.

extern void __tsan_acquire(void *addr) __attribute__((weak));
extern void __tsan_release(void *addr) __attribute__((weak));

/// Whether the process runs under ThreadSanitizer.
static inline __attribute__((always_inline)) int courier_tsan_active(void) {
    return __tsan_acquire != 0;
}

extern void __asan_init(void) __attribute__((weak));

/// Whether the process runs under AddressSanitizer.
static inline __attribute__((always_inline)) int courier_asan_active(void) {
    return __asan_init != 0;
}

static inline __attribute__((always_inline)) void courier_tsan_acquire(const void *addr) {
    if (__tsan_acquire) __tsan_acquire((void *)addr);
}

static inline __attribute__((always_inline)) void courier_tsan_release(const void *addr) {
    if (__tsan_release) __tsan_release((void *)addr);
}

#endif
