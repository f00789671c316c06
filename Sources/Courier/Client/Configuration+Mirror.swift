import Foundation
import HTTPTypes

// What `print`, `dump` and a debugger show of the configuration values an app may log: every
// setting, no secret. The default reflection showed the values of every header field (an API
// key in `defaultHeaders`), general parameters (`api_key=`) and a signing key's bytes.
// `ConfigurationDescriptionTests` checks that each mirror lists every stored property.

extension HTTPClient.Configuration: CustomReflectable {
    /// Every setting; the values of the client's credential fields in `defaultHeaders`
    /// redacted (as its logs redact them).
    public var customMirror: Mirror {
        let redaction = Redaction.default.adding(CredentialScope.fieldNames(of: self))
        return Mirror(
            self,
            children: [
                "baseURL": baseURL as Any, "timeout": timeout as Any, "connectTimeout": connectTimeout,
                "stallTimeout": stallTimeout as Any, "defaultHeaders": redaction.redact(defaultHeaders),
                "maxConnectionsPerHost": maxConnectionsPerHost, "maxConnections": maxConnections,
                "maxRedirects": maxRedirects, "tls": tls, "resolve": resolve, "proxy": proxy,
                "maxResponseSize": maxResponseSize, "sensitiveHeaderNames": sensitiveHeaderNames,
                "authorization": authorization, "credentialOrigins": credentialOrigins,
                "notificationCenter": notificationCenter, "sessionScope": sessionScope as Any, "logger": logger,
                "enablesCookieEngine": enablesCookieEngine, "cookieJar": cookieJar as Any, "decoding": decoding,
                "cache": cache as Any, "tracer": tracer as Any, "metricsFactory": metricsFactory as Any,
            ], displayStyle: .struct)
    }
}

extension ServiceConfiguration: CustomReflectable {
    /// Every setting; the values of secret header fields in `headers` and of general
    /// parameters with secret names (`api_key`, `token`, …) redacted.
    public var customMirror: Mirror {
        let redaction = Redaction.default
        let parameters = generalParameters.map { parameter in
            redaction.isRedacted(queryName: parameter.name)
                ? (name: parameter.name, value: Redaction.marker) : parameter
        }
        return Mirror(
            self,
            children: [
                "name": name as Any, "servers": servers as Any, "headers": redaction.redact(headers),
                "generalParameters": parameters, "realTimeParameters": realTimeParameters as Any,
                "requestSerializer": requestSerializer, "decoding": decoding as Any, "pipeline": pipeline,
                "retryPolicy": retryPolicy, "adapters": adapters, "retriers": retriers,
                "authentication": authentication as Any, "envelope": envelope as Any, "signer": signer as Any,
                "monitors": monitors, "cookieJar": cookieJar as Any, "intervalGate": intervalGate,
                "inFlightGuard": inFlightGuard, "deduplicator": deduplicator, "clock": clock,
                "callbackQueue": callbackQueue, "maximumAttempts": maximumAttempts, "errorMapper": errorMapper as Any,
                "networkStatus": networkStatus as Any, "whenOffline": whenOffline,
            ], displayStyle: .struct)
    }
}

extension CallOptions: CustomReflectable {
    /// Every setting; the values of secret header fields in `headers` (a per-call
    /// `Authorization`) and of secret query parameters in `server` redacted.
    public var customMirror: Mirror {
        let redaction = Redaction.default
        let fields = storedFields
        return Mirror(
            self,
            children: [
                "requestSerializer": fields.requestSerializer as Any, "headers": redaction.redact(fields.headers),
                "timeout": fields.timeout as Any, "maxResponseSize": fields.maxResponseSize as Any,
                "maxRedirects": fields.maxRedirects as Any, "uploadProgress": fields.uploadProgress as Any,
                "downloadProgress": fields.downloadProgress as Any, "cachePolicy": fields.cachePolicy,
                "cacheLifetime": fields.cacheLifetime as Any, "staleIfError": fields.staleIfError as Any,
                "retryPolicy": fields.retryPolicy as Any, "interval": fields.interval as Any,
                "server": fields.server.map { redaction.redact(target: $0.absoluteString) } as Any,
                "sendsCredentialToServer": fields.sendsCredentialToServer, "validator": fields.validator as Any,
                "preprocessors": fields.preprocessors, "adapters": fields.adapters, "retriers": fields.retriers,
                "deduplicates": fields.deduplicates, "includesGeneralParameters": fields.includesGeneralParameters,
                "skipIf": fields.skipIf as Any, "skipsWhileInFlight": fields.skipsWhileInFlight,
                "noData": fields.noData, "acceptsResult": fields.acceptsResult as Any, "userInfo": fields.userInfo,
                "errorMapper": fields.errorMapper as Any, "whenOffline": fields.whenOffline as Any,
                "logger": fields.logger as Any, "operationName": fields.operationName as Any,
                "keepsAnswerAsItCame": fields.keepsAnswerAsItCame,
            ], displayStyle: .struct)
    }
}

extension RequestSigner.Key: CustomStringConvertible, CustomReflectable {
    /// The key's id; its secret redacted.
    public var description: String { "Key(id: \(id), secret: \(Redaction.marker))" }

    /// The key's id; its secret redacted.
    public var customMirror: Mirror {
        Mirror(self, children: ["id": id, "secret": Redaction.marker], displayStyle: .struct)
    }
}

extension HTTPClient.Settings: CustomReflectable {
    /// Every setting; the values of secret header fields in `defaultHeaders` redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "baseURL": baseURL as Any, "defaultHeaders": Redaction.default.redact(defaultHeaders),
                "timeout": timeout as Any, "connectTimeout": connectTimeout, "stallTimeout": stallTimeout as Any,
            ], displayStyle: .struct)
    }
}

extension ServiceCore.Settings: CustomReflectable {
    /// Every setting; the values of secret header fields in `headers` redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "headers": Redaction.default.redact(headers), "retryPolicy": retryPolicy, "timeout": timeout as Any,
            ], displayStyle: .struct)
    }
}
