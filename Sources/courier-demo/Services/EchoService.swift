import Courier
import Foundation

/// An httpbin-style API (`/get`, `/anything`, `/bytes/N`): enough to run the steps of the tour
/// that need no fixture of their own against any server.
struct EchoService: APIService {
    let core: ServiceCore

    enum Failure: Error, Equatable {
        case tooFast
        case unavailable(Int)
        case offline
        case unexpected(String)
    }

    func get(step: String) async throws(Failure) -> Echo {
        do {
            return try await get("get", parameters: ["step": step], options: CallOptions(interval: .drop(.seconds(1))))
        } catch {
            throw Self.map(error)
        }
    }

    func postForm(_ settings: Settings) async throws(Failure) -> Echo {
        do {
            return try await post("anything", body: settings, options: CallOptions(requestSerializer: .form))
        } catch {
            throw Self.map(error)
        }
    }

    func bytes(_ count: Int) async throws(Failure) -> Response<Data> {
        do { return try await send(Endpoint(.get, "bytes/\(count)", serializer: .data)) } catch {
            throw Self.map(error)
        }
    }

    func item(_ id: Int) async throws(Failure) -> Echo {
        do { return try await get("anything/items/\(id)") } catch { throw Self.map(error) }
    }

    func upload(_ data: Data, progress: @escaping @Sendable (TransferProgress) -> Void) async throws(Failure) -> Echo {
        var form = MultipartFormData()
        form.append(data, name: "file", fileName: "avatar.png", contentType: "image/png")
        let options = CallOptions(requestSerializer: .multipart, uploadProgress: progress)
        do { return try await post("anything", body: form, options: options) } catch { throw Self.map(error) }
    }

    static func map(_ error: CourierError) -> Failure {
        switch error.code {
        case .throttled: .tooFast
        case .httpStatus: .unavailable(error.status?.code ?? 0)
        case .cannotConnect, .timedOut: .offline
        default: .unexpected(error.description)
        }
    }
}
