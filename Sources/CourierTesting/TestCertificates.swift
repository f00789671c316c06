import Foundation

/// A throwaway CA and a server certificate for `localhost` and `127.0.0.1`, made with the
/// `openssl` command line.
struct TestCertificates {
    let caPath: String
    let certificatePath: String
    let keyPath: String

    /// Creates `ca.pem`, `ca.key`, `server.pem` and `server.key` in `directory`.
    static func make(in directory: URL) throws -> TestCertificates {
        let dir = directory.path
        let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(
            ["req", "-x509"] + ecKey + [
                "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem", "-days", "7",
                // A name of its own: OpenSSL finds issuers by name, so two test CAs must not share one.
                "-subj", "/CN=Courier Test CA \(UUID().uuidString.prefix(8))",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        try openssl(
            ["req"] + ecKey + ["-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr", "-subj", "/CN=localhost"])
        let extensions = """
            subjectAltName=DNS:localhost,IP:127.0.0.1
            basicConstraints=CA:FALSE
            keyUsage=critical,digitalSignature,keyEncipherment
            extendedKeyUsage=serverAuth

            """
        try extensions.write(toFile: "\(dir)/server.ext", atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key",
            "-CAcreateserial", "-out", "\(dir)/server.pem", "-days", "7", "-extfile", "\(dir)/server.ext",
        ])
        return TestCertificates(
            caPath: "\(dir)/ca.pem", certificatePath: "\(dir)/server.pem", keyPath: "\(dir)/server.key")
    }

    /// A CA directory holding the certificates of `caPath` under OpenSSL's hashed name
    /// (`<subject hash>.0`, as `openssl rehash` names them), made in `directory`.
    static func hashedDirectory(for caPath: String, in directory: URL) throws -> URL {
        guard let openssl = ChildProcess.find("openssl") else {
            throw NginxServer.Failure(description: "openssl is not installed (apt-get install openssl)")
        }
        let result = try ChildProcess.run(
            openssl, ["x509", "-subject_hash", "-noout", "-in", caPath], capture: .capture)
        let hash = String(decoding: result.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, !hash.isEmpty else {
            throw NginxServer.Failure(description: "openssl x509 -subject_hash failed for \(caPath)")
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: caPath, toPath: directory.appendingPathComponent("\(hash).0").path)
        return directory
    }

    private static func openssl(_ arguments: [String]) throws {
        guard let openssl = ChildProcess.find("openssl") else {
            throw NginxServer.Failure(description: "openssl is not installed (apt-get install openssl)")
        }
        let result = try ChildProcess.run(openssl, arguments, capture: .capture, stderr: true)
        guard result.status == 0 else {
            throw NginxServer.Failure(
                description:
                    "openssl \(arguments.first ?? "") failed: \(String(decoding: result.output, as: UTF8.self))")
        }
    }
}
