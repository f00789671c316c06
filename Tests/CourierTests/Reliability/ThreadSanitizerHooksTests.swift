import Foundation
import Synchronization
import Testing

@_spi(Fuzzing) @testable import Courier

/// The two kinds of synchronisation ThreadSanitizer cannot see on Linux, each exercised the way
/// the library uses it. In the normal run they check the values; under
/// `scripts/sanitizers.sh thread` (halt_on_error=1) a missing annotation fails the run with a
/// race report, which is what the hooks in `CSanitizerHooks.h` prevent.
@Suite struct ThreadSanitizerHooksTests {
    /// A reference type so that reading it after the hand-over touches memory the other
    /// thread wrote.
    final class Payload: @unchecked Sendable {
        // @unchecked Sendable: written once on the resuming thread before the resume, read
        // only after the continuation returned.
        var values: [Int]
        init(_ values: [Int]) { self.values = values }
    }

    /// Four threads contend for one `LockedValue`. With `Synchronization.Mutex` alone, TSan
    /// sees no happens-before between a critical section and the next one that got the lock
    /// through the slow path (spin loop or PI futex), and reports the counter as raced.
    @Test func contendedLockedValueCountsExactly() async {
        final class Shared: Sendable {
            let counter = LockedValue([Int]())
        }
        let shared = Shared()
        let threads = 4
        let rounds = 20_000
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let finished = LockedValue(0)
            for thread in 0..<threads {
                Thread {
                    for round in 0..<rounds {
                        // An array, so the guarded value is heap memory TSan tracks.
                        shared.counter.withLock { values in
                            if values.count <= thread {
                                values.append(contentsOf: repeatElement(0, count: thread + 1 - values.count))
                            }
                            values[thread] += round & 1
                        }
                    }
                    if finished.withLock({ count in
                        count += 1; return count
                    }) == threads {
                        done.resume()
                    }
                }.start()
            }
        }
        #expect(shared.counter.withLock { $0 } == Array(repeating: rounds / 2, count: threads))
    }

    /// A continuation resumed by another thread *before* the task reaches its await: the Swift
    /// runtime goes on without the acquire that pairs with the resume's release, so TSan sees
    /// the payload written on the other thread as raced unless `continuationReturned()` adds
    /// it. The body waits until the other thread has resumed, so every round takes that path.
    @Test func continuationResumedBeforeTheAwaitHandsOverItsPayload() async {
        for round in 0..<200 {
            let payload = await Self.resumedEarly(round)
            #expect(payload.values == Array(round..<(round + 8)))
        }
    }

    private final class Flag: Sendable {
        let value = Atomic(false)
    }

    private static func resumedEarly(_ round: Int) async -> Payload {
        defer { ThreadSanitizer.continuationReturned() }
        return await withUnsafeContinuation { (continuation: UnsafeContinuation<Payload, Never>) in
            // A relaxed flag: it orders nothing for TSan, so the only happens-before left is
            // the one through the continuation (a semaphore would add its own).
            let resumed = Flag()
            Thread {
                continuation.resume(returning: Payload(Array(round..<(round + 8))))
                resumed.value.store(true, ordering: .relaxed)
            }.start()
            while !resumed.value.load(ordering: .relaxed) { sched_yield() }
        }
    }
}
