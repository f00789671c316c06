import Courier
import Foundation

/// Pictures: served by the CDN, uploaded to the API.
struct MediaService: APIService {
    let core: ServiceCore

    enum Failure: Error, Equatable {
        case signedOut
        case tooLarge
        case offline
        case unexpected(String)
    }

    /// The CDN's base URL; the client's cache keeps its answers for a year.
    let cdn: URL

    /// Downloads a file from the CDN; `isFromCache` tells whether the network was used.
    func download(_ path: String) async throws(Failure) -> Response<Data> {
        do {
            return try await send(Endpoint(.get, path, serializer: .data, options: CallOptions(server: cdn)))
        } catch {
            throw Self.map(error)
        }
    }

    /// How many files the user may still upload.
    func quota() async throws(Failure) -> Int {
        do { return try await get("media/quota", as: Counter.self).count } catch { throw Self.map(error) }
    }

    /// Uploads an avatar as `multipart/form-data`, reporting progress as the body goes out.
    func uploadAvatar(
        _ image: Data, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws(Failure) -> UploadReceipt {
        var form = MultipartFormData()
        form.append("avatar", name: "purpose")
        form.append(image, name: "file", fileName: "avatar.png", contentType: "image/png")
        let options = CallOptions(requestSerializer: .multipart, uploadProgress: progress)
        do { return try await post("users/me/avatar", body: form, options: options) } catch { throw Self.map(error) }
    }

    static func map(_ error: CourierError) -> Failure {
        switch error.code {
        case .httpStatus where error.status == .unauthorized, .authentication: .signedOut
        case .httpStatus where error.status == .contentTooLarge: .tooLarge
        case .cannotConnect, .timedOut: .offline
        default: .unexpected(error.description)
        }
    }
}
