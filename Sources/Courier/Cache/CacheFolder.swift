import Foundation

/// Keeps the disk tier's folder and files private to the user: the folder `0700`, the database,
/// its `-wal` and `-shm` files and the key file `0600`.
///
/// A folder that exists already with wider permissions (made by an older version, or by hand
/// under a permissive umask) is tightened to `0700`. A folder that cannot be made private is
/// refused with `CourierError.configuration` rather than used: one owned by another user, or
/// a shared sticky folder such as `/tmp` itself (name a subfolder of it instead).
enum CacheFolder {
    static let folderMode: mode_t = 0o700
    static let fileMode: mode_t = 0o600

    /// Creates `directory` (and its parents) or checks and tightens the existing one.
    /// - Throws: `CourierError.configuration` when it cannot be created or made private.
    static func secure(_ directory: String) throws(CourierError) {
        var info = stat()
        if stat(directory, &info) != 0 {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: Int(folderMode)])
            } catch {
                throw CourierError(.configuration, "cannot create the cache folder \(directory)", underlying: error)
            }
            guard stat(directory, &info) == 0 else {
                throw CourierError(.configuration, "cannot create the cache folder \(directory)")
            }
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw CourierError(.configuration, "the cache folder \(directory) is not a folder")
        }
        guard info.st_uid == geteuid() else {
            throw CourierError(
                .configuration, "the cache folder \(directory) belongs to another user; it cannot be kept private")
        }
        guard info.st_mode & S_ISVTX == 0 else {
            throw CourierError(
                .configuration,
                "the cache folder \(directory) is a shared sticky folder (like /tmp); use a subfolder of it")
        }
        if info.st_mode & 0o7777 != folderMode, chmod(directory, folderMode) != 0 {
            throw CourierError(
                .configuration, "cannot make the cache folder \(directory) private (chmod 0700: errno \(errno))")
        }
    }

    /// Creates `path` empty with mode `0600` when it does not exist (so SQLite, which gives its
    /// `-wal` and `-shm` files the database's mode, never makes a world-readable one).
    static func createPrivateFile(_ path: String) throws(CourierError) {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, fileMode)
        guard fd >= 0 else {
            throw CourierError(.configuration, "cache storage: cannot create \(path) (errno \(errno))")
        }
        close(fd)
    }

    /// Sets `0600` on each of `paths` that exists with another mode.
    static func tighten(_ paths: [String]) throws(CourierError) {
        for path in paths {
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o7777 != fileMode
            else { continue }
            guard chmod(path, fileMode) == 0 else {
                throw CourierError(.configuration, "cache storage: cannot make \(path) private (errno \(errno))")
            }
        }
    }
}
