/// Progress of a batch: how many of its calls have finished.
public struct BatchProgress: Sendable, Hashable {
    /// Calls finished, successfully or not.
    public var completed: Int
    /// Calls that failed so far.
    public var failed: Int
    /// Calls in the batch.
    public var total: Int
    /// `completed / total`, 1 for an empty batch.
    public var fractionCompleted: Double { total == 0 ? 1 : Double(completed) / Double(total) }
}

/// Runs calls in parallel with a concurrency limit and returns every result.
public enum Batch {
    /// Runs `operations`, at most `maximumConcurrent` at a time.
    ///
    /// A failure does not stop the others unless `cancelOnFirstFailure`; then the calls still
    /// running are cancelled and those not started end as `.cancelled` without running.
    /// - Parameters:
    ///   - operations: the calls.
    ///   - maximumConcurrent: how many run at once (at least 1).
    ///   - cancelOnFirstFailure: whether one failure cancels the rest.
    ///   - progress: called after each call finishes (from the batch's task, in order of
    ///     completion).
    /// - Returns: one result per operation, in the order given.
    public static func run<Value: Sendable>(
        _ operations: [@Sendable () async throws -> Value], maximumConcurrent: Int = 4,
        cancelOnFirstFailure: Bool = false, progress: (@Sendable (BatchProgress) -> Void)? = nil
    ) async -> [Result<Value, CourierError>] {
        let total = operations.count
        var results = [Result<Value, CourierError>?](repeating: nil, count: total)
        var status = BatchProgress(completed: 0, failed: 0, total: total)
        var stopped = false
        await withTaskGroup(of: (Int, Result<Value, CourierError>).self) { group in
            var next = 0
            func launch() {
                let index = next
                let operation = operations[index]
                next += 1
                group.addTask {
                    if Task.isCancelled {
                        return (
                            index, .failure(CourierError(.cancelled, "the batch was cancelled before this call ran"))
                        )
                    }
                    do {
                        return (index, .success(try await operation()))
                    } catch {
                        return (index, .failure(Call<Value>.courierError(error)))
                    }
                }
            }
            while next < min(total, max(1, maximumConcurrent)) { launch() }
            while let (index, result) = await group.next() {
                results[index] = result
                status.completed += 1
                if case .failure = result {
                    status.failed += 1
                    if cancelOnFirstFailure && !stopped {
                        stopped = true
                        group.cancelAll()
                    }
                }
                progress?(status)
                if next < total {
                    if stopped || Task.isCancelled {
                        // Not started: record without running.
                        while next < total {
                            results[next] = .failure(
                                CourierError(.cancelled, "the batch was cancelled before this call ran"))
                            next += 1
                            status.completed += 1
                            status.failed += 1
                            progress?(status)
                        }
                    } else {
                        launch()
                    }
                }
            }
        }
        return results.map { $0 ?? .failure(CourierError(.cancelled, "the call did not run")) }
    }
}

/// Calls run one after another, each given the previous result:
/// `Chain { try await auth.refresh() }.then { token in try await api.profile(token) }.run()`.
public struct Chain<Value: Sendable>: Sendable {
    /// The last step; it links back to the first.
    private let last: ChainStep

    /// Starts a chain with its first call.
    public init(_ first: @escaping @Sendable () async throws -> Value) {
        last = ChainStep(after: nil) { _ in try await first() }
    }

    private init(last: ChainStep) { self.last = last }

    /// Adds a call that runs after the previous one succeeds and receives its value.
    /// - Parameter next: the call; it is not run when an earlier one fails.
    /// - Returns: the longer chain.
    public func then<Next: Sendable>(_ next: @escaping @Sendable (Value) async throws -> Next) -> Chain<Next> {
        // Every step was made by this type with the type its next step takes.
        Chain<Next>(last: ChainStep(after: last) { value in try await next(value as! Value) })
    }

    /// Runs the chain.
    /// - Returns: the last call's value.
    /// - Throws: the first failure, as a `CourierError`.
    public func run() async throws(CourierError) -> Value {
        do { return try await last.run() as! Value } catch { throw Call<Value>.courierError(error) }
    }

    /// The chain as a deferred call, with an identifier, that can be started and cancelled.
    public func call(id: CallID = .next()) -> Call<Value> {
        let last = self.last
        return Call(id: id) { try await last.run() as! Value }
    }
}

/// One step of a ``Chain``, linked to the step before it.
///
/// A list rather than closures nested in closures: a chain of 100,000 steps built in a loop
/// was released (and run) one nested level per step, which overflowed the stack. Here the
/// steps run in a loop and are released in one (see `deinit`).
private final class ChainStep: Sendable {
    typealias Body = @Sendable (any Sendable) async throws -> any Sendable

    private let body: Body
    /// Taken only by `deinit`, of a step no one else holds.
    private let previous: LockedValue<ChainStep?>

    /// A step that runs `body` on the value of `previous` (nothing for the first step).
    init(after previous: ChainStep?, _ body: @escaping Body) {
        self.body = body
        self.previous = LockedValue(previous)
    }

    deinit {
        // Releases the steps before this one that only it holds, one after another, instead
        // of each one's release releasing the one before it.
        var next = previous.withLock { $0.take() }
        while var step = next.take() {
            guard isKnownUniquelyReferenced(&step) else { break }
            next = step.previous.withLock { $0.take() }
        }
    }

    /// Runs every step from the first, checking for cancellation before each one: a chain run
    /// by a cancelled task runs no step, as a batch runs no call.
    /// - Returns: this step's value.
    func run() async throws -> any Sendable {
        var steps: [ChainStep] = []
        var step: ChainStep? = self
        while let current = step {
            steps.append(current)
            step = current.previous.withLock { $0 }
        }
        var value: any Sendable = ()
        for current in steps.reversed() {
            try Task.checkCancellation()
            value = try await current.body(value)
        }
        return value
    }
}
