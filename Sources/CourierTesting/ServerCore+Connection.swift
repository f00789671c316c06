import CZlib
import Foundation
import Glibc

extension ServerCore {
    /// Serves requests on one connection until it closes, a response closes it, or the server stops.
    func serve(fd: Int32, id: Int) {
        let reader = RequestReader(fd: fd)
        var index = 0
        while !isStopped {
            let head: RequestHead
            do {
                guard let next = try reader.readHead() else { return }
                head = next
            } catch .headTooLarge {
                _ = write(.text("request header block too large\n", status: 431), to: fd, keepAlive: false, head: nil)
                lingeringClose(fd)
                return
            } catch .malformed(let why) {
                _ = write(.text("bad request: \(why)\n", status: 400), to: fd, keepAlive: false, head: nil)
                lingeringClose(fd)
                return
            } catch {
                return
            }
            index += 1

            if head.expectsContinue && (head.isChunked || (head.contentLength ?? 0) > 0) {
                guard Socket.writeAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }
            }

            let request: RecordedRequest
            do {
                // `/upload` bodies are counted and checksummed, never stored: upload tests send
                // hundreds of MiB.
                let store = head.path != "/upload"
                var body = Data()
                if store, let length = head.contentLength, length <= Self.maximumStoredBody {
                    body.reserveCapacity(length)
                }
                var crc = crc32(0, nil, 0)
                let count = try reader.readBody(of: head, limit: store ? Self.maximumStoredBody : Int.max) { piece in
                    crc = crc32(crc, piece.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(piece.count))
                    if store { body.append(contentsOf: piece) }
                }
                request = RecordedRequest(
                    head: head, body: body, bodyByteCount: count, bodyCRC32: UInt32(truncatingIfNeeded: crc),
                    connectionID: id, indexOnConnection: index)
            } catch .bodyTooLarge {
                _ = write(.text("request body too large\n", status: 413), to: fd, keepAlive: false, head: head)
                lingeringClose(fd)
                return
            } catch .malformed(let why) {
                _ = write(.text("bad request body: \(why)\n", status: 400), to: fd, keepAlive: false, head: head)
                lingeringClose(fd)
                return
            } catch {
                return
            }

            let response = respond(to: request)
            let keepAlive = head.keepAlive && !response.closesConnection && !isStopped
            guard write(response, to: fd, keepAlive: keepAlive, head: head), keepAlive else { return }
        }
    }

    /// Ends the sending side and drains what the client still sends, briefly, so that closing
    /// with unread input does not turn into an RST that destroys the error response just sent.
    func lingeringClose(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_WR))
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        var drained = 0
        while drained < 64 * 1024 * 1024 {
            let ready = Socket.poll([fd, wakeRead], timeoutMilliseconds: 1000)
            guard ready.contains(0), !ready.contains(1) else { return }
            let count = scratch.withUnsafeMutableBytes { Socket.read(fd, into: $0) }
            if count == 0 { return }
            drained += count
        }
    }
}
