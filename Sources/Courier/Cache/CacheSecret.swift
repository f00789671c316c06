import Crypto
import Foundation

/// The random per-cache key of the keyed one-way digests (HMAC-SHA256) that stand for
/// credentials in cache keys and `Vary` variants.
///
/// A plain hash of a short API key or a guessable token can be brute-forced from a stolen
/// cache file; an HMAC cannot without this key. So the key never goes into the database: a
/// memory-only cache makes one per instance, a disk cache keeps it in its own `0600` file
/// beside the database (`cache.key`), created atomically, so entries survive a restart.
struct CacheSecret: Sendable {
    /// The key's bytes: `SymmetricKey` is not `Sendable` in swift-crypto 3, and a cache is
    /// shared between threads, so the key is rebuilt from them for each digest.
    private let bytes: [UInt8]

    /// The key file's name inside the cache folder.
    static let fileName = "cache.key"
    static let byteCount = 32

    /// A secret from raw key bytes (tests use the RFC 4231 vectors).
    init(bytes: [UInt8]) { self.bytes = bytes }

    /// A new random key (from the system's random number generator).
    static func random() -> CacheSecret {
        var generator = SystemRandomNumberGenerator()
        return CacheSecret(bytes: (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The hex HMAC-SHA256 of `material` under this key.
    func hex(_ material: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data(material.utf8), using: SymmetricKey(data: bytes))
        return Self.hexString(code)
    }

    /// A key of its own for `purpose`, derived from this one (the HMAC-SHA256 of the purpose's
    /// name), so that a code made for one use is never a valid digest or code for another.
    func derivedKey(for purpose: String) -> SymmetricKey {
        SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Data(purpose.utf8), using: SymmetricKey(data: bytes)))
    }

    /// Lowercase hex of `bytes`.
    static func hexString<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// What loading the key file found.
    struct Loaded {
        var secret: CacheSecret
        /// Why a new key was made (the file was missing, or damaged): the entries stored under
        /// the old one can no longer be matched to an identity and must be dropped.
        var replacedBecause: String?
    }

    /// Reads the key file in `directory` (a folder `CacheFolder.secure` made private), or
    /// creates it. A file of the wrong size, type or owner is replaced by a new key.
    /// - Throws: `CourierError.configuration` when the file cannot be read or written.
    static func load(directory: String) throws(CourierError) -> Loaded {
        let path = directory + "/" + fileName
        switch read(path) {
        case .key(let secret):
            return Loaded(secret: secret, replacedBecause: nil)
        case .missing:
            // link() never replaces: when two processes create the key together, one wins and
            // the other reads the winner's key.
            let fresh = random()
            switch try write(fresh, to: path, replacing: false) {
            case .written: return Loaded(secret: fresh, replacedBecause: "the key file was missing")
            case .exists:
                guard case .key(let winner) = read(path) else {
                    throw CourierError(.configuration, "cache storage: cannot read the key file \(path)")
                }
                return Loaded(secret: winner, replacedBecause: nil)
            }
        case .damaged(let reason):
            let fresh = random()
            _ = try write(fresh, to: path, replacing: true)
            return Loaded(secret: fresh, replacedBecause: "the key file was damaged (\(reason))")
        }
    }

    private enum ReadResult {
        case key(CacheSecret)
        case missing
        case damaged(String)
    }

    private static func read(_ path: String) -> ReadResult {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .damaged("cannot open it: errno \(errno)") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return .damaged("not a regular file") }
        guard info.st_uid == geteuid() else { return .damaged("owned by another user") }
        guard info.st_size == byteCount else { return .damaged("\(info.st_size) bytes instead of \(byteCount)") }
        if info.st_mode & 0o077 != 0 { _ = fchmod(fd, 0o600) }
        var bytes = [UInt8](repeating: 0, count: byteCount)
        let count = bytes.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, byteCount) }
        guard count == byteCount else { return .damaged("short read") }
        return .key(CacheSecret(bytes: bytes))
    }

    private enum WriteResult {
        case written
        case exists
    }

    /// Writes `secret` to a private temporary file, then links (or, when `replacing`, renames)
    /// it into place, so no process ever reads a partial key.
    private static func write(_ secret: CacheSecret, to path: String, replacing: Bool) throws(CourierError)
        -> WriteResult
    {
        let temporary = path + ".tmp-" + UUID().uuidString
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CourierError(.configuration, "cache storage: cannot create the key file \(path) (errno \(errno))")
        }
        defer { unlink(temporary) }
        let bytes = secret.bytes
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == byteCount, synced else {
            throw CourierError(.configuration, "cache storage: cannot write the key file \(path)")
        }
        if replacing {
            guard rename(temporary, path) == 0 else {
                throw CourierError(
                    .configuration, "cache storage: cannot replace the key file \(path) (errno \(errno))")
            }
            return .written
        }
        if link(temporary, path) == 0 { return .written }
        if errno == EEXIST { return .exists }
        throw CourierError(.configuration, "cache storage: cannot create the key file \(path) (errno \(errno))")
    }
}
