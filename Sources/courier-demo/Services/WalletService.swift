import Courier
import Foundation

/// The wallet API of a newer back end: every answer is HTTP 200 with an envelope
/// (`{"code": 0, "msg": "ok", "data": {…}}`) and every request must be signed.
///
/// Both are declared once, in the service's configuration: the envelope's retry and refresh
/// codes drive the same retry and refresh as HTTP statuses do, and the signer signs each
/// attempt afresh.
struct WalletService: APIService {
    let core: ServiceCore

    /// The app's signing key (the fixture API knows it too). Computed, not a stored global:
    /// LeakSanitizer cannot see the `Data` inside a lazily initialized global and reports it.
    static var key: RequestSigner.Key { RequestSigner.Key(id: "demo-app", secret: Data("demo-signing-secret".utf8)) }

    /// The envelope's codes: 50301 "busy, try again", 40101 "token expired".
    static func configuration(authentication: any CredentialAuthentication) -> ServiceConfiguration {
        var configuration = ServiceConfiguration(
            retryPolicy: RetryPolicy(maximumRetries: 2, baseDelay: .milliseconds(20), jitter: 0),
            authentication: authentication)
        configuration.envelope = .json(retryCodes: ["50301"], refreshCodes: ["40101"])
        configuration.signer = RequestSigner(key: key)
        return configuration
    }

    /// The balance (the envelope's `data`).
    func balance() async throws(CourierError) -> Response<Balance> {
        try await send(Endpoint.get("wallet/balance"))
    }
}

/// `GET wallet/balance`'s payload.
struct Balance: Decodable, Sendable {
    var cents: Int
    var currency: String
}
