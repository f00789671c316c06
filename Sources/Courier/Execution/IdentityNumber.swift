import Synchronization

/// Numbers no other object of the process has had, one per object that a `RequestIdentity` or
/// a sharing key names (a client, a cookie jar, a service, a streamed body). Not the object's
/// address: the allocator gives it to a later object once this one is released, while the
/// gates of a shared configuration still hold keys made with it.
enum IdentityNumber {
    private static let last = Atomic<UInt64>(0)

    /// A number not handed out before in this process.
    static func next() -> UInt64 { last.wrappingAdd(1, ordering: .relaxed).newValue }
}
