import CSanitizerHooks

/// ThreadSanitizer annotations for synchronisation TSan cannot see; no-ops outside TSan.
enum ThreadSanitizer {
    /// Tells TSan that the current task, back from awaiting a continuation, sees everything
    /// the resumer did before resuming it.
    ///
    /// The Swift runtime (6.3, Linux) annotates a resume as a release on the awaiting task and
    /// the task's later run as the matching acquire, except when the resume came *before* the
    /// await: `swift_continuation_await` then finds the continuation resumed and goes on
    /// without an acquire. A transfer that ends on the curl thread before its task reached the
    /// await then shows up as a race on the response (and on the task's own frame). This is the
    /// acquire the runtime skips, on the same address (the task) as its release. Call it on
    /// every path out of a `with…Continuation` whose continuation another thread resumes.
    @inline(__always)
    static func continuationReturned() {
        guard courier_tsan_active() != 0 else { return }
        withUnsafeCurrentTask { task in
            // `UnsafeCurrentTask` is a single reference to the runtime's task object, the
            // address the runtime releases on when the continuation is resumed.
            guard let task else { return }
            courier_tsan_acquire(unsafeBitCast(task, to: UnsafeRawPointer.self))
        }
    }
}

/// Which sanitizer runtime the process was built with, for checks whose figures a sanitizer
/// distorts.
enum SanitizerRuntime {
    /// Whether ThreadSanitizer or AddressSanitizer is loaded. Their shadow memory (and ASan's
    /// quarantine of freed blocks) count in the resident size, so a peak-RSS bound measured
    /// in a parallel test run says nothing about the code under test there.
    static var isLoaded: Bool { courier_tsan_active() != 0 || courier_asan_active() != 0 }
}
