import Foundation

/// The time bounds of tests (a wait for code that would hang, an "at most this long"), made
/// longer in a process where the same code runs many times slower.
///
/// ThreadSanitizer runs Courier's suite about ten times slower, and with the whole suite in
/// parallel on two cores a test can wait its turn for tens of seconds: a bound right for the
/// plain run then fails for the machine, not the code. The plain run keeps every bound as it
/// is written.
public enum TestTimeBound {
    /// How many times longer a bound is in this process: the `COURIER_TEST_TIME_SCALE`
    /// environment variable (a whole number from 1 to 100), 1 without it.
    /// `scripts/sanitizers.sh` sets 10 under ThreadSanitizer and 3 under AddressSanitizer.
    public static let scale: Int = {
        guard let text = ProcessInfo.processInfo.environment["COURIER_TEST_TIME_SCALE"], let value = Int(text)
        else { return 1 }
        return min(max(value, 1), 100)
    }()

    /// `duration` times `scale`.
    /// - Parameter duration: The bound of the plain run.
    /// - Returns: The bound in this process.
    public static func scaled(_ duration: Duration) -> Duration { duration * scale }

    /// `seconds` times `scale`, as a `DispatchTime` from now (for a semaphore's wait).
    /// - Parameter seconds: The bound of the plain run, in seconds.
    /// - Returns: The deadline in this process.
    public static func deadline(seconds: Int) -> DispatchTime { .now() + .seconds(seconds * scale) }
}
