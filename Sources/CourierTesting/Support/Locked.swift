import CourierLocking

/// A value behind the project's one lock (`LockedValue`), as a class so that the test servers
/// can share it between objects and closures.
final class Locked<Value: Sendable>: Sendable {
    private let value: LockedValue<Value>

    init(_ value: Value) {
        self.value = LockedValue(value)
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try value.withLock { (value: inout sending Value) throws -> sending Result in
            try body(&value)
        }
    }
}
