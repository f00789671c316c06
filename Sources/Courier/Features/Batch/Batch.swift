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
    private let body: @Sendable () async throws -> Value

    /// Starts a chain with its first call.
    public init(_ first: @escaping @Sendable () async throws -> Value) { self.body = first }

    /// Adds a call that runs after the previous one succeeds and receives its value.
    /// - Parameter next: the call; it is not run when an earlier one fails.
    /// - Returns: the longer chain.
    public func then<Next: Sendable>(_ next: @escaping @Sendable (Value) async throws -> Next) -> Chain<Next> {
        let body = self.body
        return Chain<Next> {
            let value = try await body()
            try Task.checkCancellation()
            return try await next(value)
        }
    }

    /// Runs the chain.
    /// - Returns: the last call's value.
    /// - Throws: the first failure, as a `CourierError`.
    public func run() async throws(CourierError) -> Value {
        do { return try await body() } catch { throw Call<Value>.courierError(error) }
    }

    /// The chain as a deferred call, with an identifier, that can be started and cancelled.
    public func call(id: CallID = .next()) -> Call<Value> { Call(id: id, operation: body) }
}
