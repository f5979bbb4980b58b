import Foundation
import ModelKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Files on Kinto, through its attachment plugin (kinto-attachment): each file is the attachment
// of a record of its own in the bucket's `files` collection (one file a record; the record's id is
// the file's). An upload is a multipart `POST …/records/{id}/attachment` whose body is written to
// a temporary file first and sent from it; a download is a `GET` of the file's location, written
// beside its destination as it arrives, checked (length, SHA-256) and then renamed over it.
// Neither holds the file in memory.

extension KintoService {
    /// The collection of the bucket whose records carry the files, one each: it must exist in a
    /// bucket other than `default` (whose collections the server makes on first write).
    public static let filesCollection = "files"

    /// How much of a file is read or written at a time.
    static let fileChunk = 1 << 20

    /// Uploads the file at `url` now and returns it.
    ///
    /// ```swift
    /// let progress = Progress(totalUnitCount: 0)
    /// let photo = try await service.upload(contentsOf: pictureURL, contentType: "image/png", progress: progress)
    /// print(photo.size, photo.sha256)
    /// ```
    ///
    /// The file is read twice, a piece at a time (copied into the request's body, a temporary
    /// file only its owner may read, then sent), so its size does not matter to memory. The
    /// server's hash and length are checked against the bytes read. The service's `timeout`
    /// applies to silence: the upload fails when no byte moves (or no answer comes) for that long,
    /// however long the whole takes. To attach a file offline and have a save or sync upload it,
    /// use ``makeFile(contentsOf:name:contentType:)``.
    ///
    /// - Parameters:
    ///   - name: The name the file keeps (by default the file's own); its extension tells the
    ///     server what kind of file it is.
    ///   - contentType: The media type; by default `application/octet-stream`.
    ///   - progress: Counts the file's bytes as they are sent; its `totalUnitCount` is set to the
    ///     file's length.
    /// - Throws: ``ServiceError``: ``ServiceError/Code/fileFailed`` when the file cannot be
    ///   read, ``ServiceError/Code/fileTooLarge`` and ``ServiceError/Code/unsupportedFileType``
    ///   when the server refuses it, ``ServiceError/Code/quotaExceeded`` when it has no room left
    ///   (sent once, not retried), ``ServiceError/Code/invalidModel`` for a name with quotes,
    ///   backslashes or control characters or a media type that is not `type/subtype`,
    ///   ``ServiceError/Code/invalidResponse`` when the server's description of the file does not
    ///   match the bytes sent or points to another origin, and the network and server errors
    ///   (``ServiceError/Code/timedOut``, ``ServiceError/Code/cancelled``, …).
    /// - Complexity: O(*n*) in the file's length, plus one request (sent again whole after a
    ///   dropped connection, as the service's ``RetryPolicy`` says).
    public func upload(
        contentsOf url: URL, name: String? = nil, contentType: String = "application/octet-stream",
        progress: Progress? = nil
    ) async throws(ServiceError) -> ServiceFile {
        try await uploadNow(.file(url), name: name ?? url.lastPathComponent, contentType: contentType, progress: progress)
    }

    /// Uploads `data` now as a file named `name`: ``upload(contentsOf:name:contentType:progress:)``
    /// with the bytes in memory.
    ///
    /// ```swift
    /// let note = try await service.upload(Data("hello".utf8), name: "hello.txt", contentType: "text/plain")
    /// ```
    ///
    /// - Throws: What ``upload(contentsOf:name:contentType:progress:)`` throws.
    /// - Complexity: O(*n*) in the data's length (written once, into the request's body), plus
    ///   one request and its retries.
    public func upload(
        _ data: Data, name: String, contentType: String = "application/octet-stream", progress: Progress? = nil
    ) async throws(ServiceError) -> ServiceFile {
        try await uploadNow(.data(data), name: name, contentType: contentType, progress: progress)
    }

    /// The two uploads above: checks the name and type, and sends `source` under a new id.
    private func uploadNow(_ source: UploadSource, name: String, contentType: String, progress: Progress?)
        async throws(ServiceError) -> ServiceFile
    {
        try Self.checkFileName(name)
        try Self.checkContentType(contentType)
        var random = RandomUUIDs()
        let id = random.makeString().lowercased()
        return try await send(
            source, id: id, name: name, contentType: contentType, expected: nil, report: Self.report(to: progress))
    }

    /// Where the bytes of an upload's body (or of a pending copy) come from.
    enum UploadSource {
        case file(URL)
        case data(Data)

        /// Hands `body` the bytes, a mebibyte at a time from a file, the data whole.
        ///
        /// - Throws: ``ServiceError/Code/fileFailed`` when the file cannot be opened or read, and
        ///   what `body` throws.
        func forEachPiece(_ body: (Data) throws(ServiceError) -> Void) throws(ServiceError) {
            switch self {
            case .data(let data):
                try body(data)
            case .file(let url):
                let input: FileHandle
                do {
                    input = try FileHandle(forReadingFrom: url)
                } catch {
                    throw ServiceError(.fileFailed(expected: "a file to read", found: "'\(url.path)': \(error)"))
                }
                defer { try? input.close() }
                while true {
                    let chunk: Data?
                    do {
                        chunk = try input.read(upToCount: KintoService.fileChunk)
                    } catch {
                        throw ServiceError(.fileFailed(expected: "a file that can be read", found: "'\(url.path)': \(error)"))
                    }
                    guard let chunk, !chunk.isEmpty else { return }
                    try body(chunk)
                }
            }
        }

        /// Writes the bytes to `output`, hashing them into `hash`; returns how many there were.
        func write(to output: FileHandle, hashing hash: inout SHA256) throws(ServiceError) -> Int64 {
            var size: Int64 = 0
            try forEachPiece { piece throws(ServiceError) in
                hash.update(piece)
                size += Int64(piece.count)
                do {
                    try output.write(contentsOf: piece)
                } catch {
                    throw ServiceError(.fileFailed(expected: "a file that can be written", found: "\(error)"))
                }
            }
            return size
        }
    }

    /// Told how many of a file's bytes have gone (or come) so far, and of how many.
    typealias ByteReport = @Sendable (_ completed: Int64, _ total: Int64) -> Void

    /// A report that sets `progress` (none without one).
    static func report(to progress: Progress?) -> ByteReport? {
        guard let progress else { return nil }
        return { completed, total in
            if progress.totalUnitCount != total { progress.totalUnitCount = total }
            progress.completedUnitCount = completed
        }
    }

    /// Uploads `source` under `id` (a second upload under an id replaces the first); returns the
    /// file, after checking the server's description of it against the bytes read and, when
    /// given, against `expected` (a pending file, whose bytes must be those it was made with).
    func send(
        _ source: UploadSource, id: String, name: String, contentType: String, expected: ServiceFile?,
        report: ByteReport?
    ) async throws(ServiceError) -> ServiceFile {
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-upload-\(id)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: body) }
        let boundary = "modelkit-" + id
        let (size, sha256, head) = try Self.writeMultipart(
            from: source, to: body, boundary: boundary, name: name, contentType: contentType)
        if let expected, expected.size != size || expected.sha256 != sha256 {
            throw ServiceError(
                .fileFailed(
                    expected: "the bytes of file '\(expected.name)', \(expected.size) with SHA-256 \(expected.sha256)",
                    found: "\(size) bytes with SHA-256 \(sha256)"))
        }
        let record = RecordID(collection: Self.filesCollection, id: id)
        guard let target = URL(string: baseURL.absoluteString + recordPath(record) + "/attachment") else {
            throw ServiceError(.invalidModel(expected: "a URL", found: "'\(baseURL.absoluteString)'"), record: record)
        }
        var request = HTTPClient.Request(method: "POST", url: target)
        request.headers["Accept"] = "application/json"
        request.headers["Content-Type"] = "multipart/form-data; boundary=\(boundary)"
        if let authorization = account.withLock({ $0.authorization }) { request.headers["Authorization"] = authorization }
        request.bodyFile = body
        if let report {
            // The body's bytes sent, as the file's: its part of the body starts after the head.
            report(0, size)
            request.onSent = { sent in report(min(size, max(0, sent - head)), size) }
        }
        // Sent again whole after a dropped connection: a second upload under the same id
        // replaces the first.
        let response = try await http.send(request)
        guard response.status == 200 || response.status == 201 else {
            throw Self.fileFailure(response).about(record)
        }
        let answer = try Self.json(response.body, record: record)
        let location = try uploadedLocation(answer, record: record, size: size, sha256: sha256)
        fileLocations.withLock { $0[id] = location }
        report?(size, size)
        return ServiceFile(id: id, name: name, contentType: contentType, size: size, sha256: sha256)
    }

    /// Downloads `file` to `destination`, replacing what is there only once the whole file has
    /// arrived and matches its length and SHA-256; on failure nothing is left at `destination`
    /// but what was there before.
    ///
    /// ```swift
    /// try await service.download(photo, to: documents.appendingPathComponent(photo.name))
    /// ```
    ///
    /// A file made on this device and not uploaded yet is copied from where it waits, without
    /// the server. Otherwise the service asks the server where the file is
    /// (``location(of:)``, once per file and service) and downloads it from there, without
    /// credentials (the plugin's files are served as static files, to anyone who has the
    /// location). The location must be on the service's origin. The service's `timeout`
    /// applies to silence, as for an upload.
    ///
    /// - Parameter progress: Counts the bytes received; its `totalUnitCount` is set to the
    ///   file's size.
    /// - Throws: ``ServiceError``: ``ServiceError/Code/invalidResponse`` for a location (or a
    ///   redirect) to another origin than the service's; ``ServiceError/Code/fileFailed`` when
    ///   the bytes are not the file's (longer, shorter, or another hash), or the destination
    ///   cannot be written; ``ServiceError/Code/notFound`` when the server has no such file;
    ///   ``ServiceError/Code/httpStatus`` for another refusal; and the network errors
    ///   (``ServiceError/Code/timedOut``, ``ServiceError/Code/cancelled``, …).
    /// - Complexity: O(*n*) in the file's length, plus at most two requests (and their retries).
    public func download(_ file: ServiceFile, to destination: URL, progress: Progress? = nil) async throws(ServiceError) {
        try await download(file, to: destination, report: Self.report(to: progress))
    }

    func download(_ file: ServiceFile, to destination: URL, report: ByteReport?) async throws(ServiceError) {
        let partial = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).modelkit-\(UUID().uuidString)")
        report?(0, file.size)
        var onProgress: (@Sendable (Int64) -> Void)?
        if let report { onProgress = { report($0, file.size) } }
        let sink = ResponseSink(url: partial, limit: file.size, onProgress: onProgress)
        do throws(ServiceError) {
            let pending = pendingFiles
            if pending.contains(file.id) {
                try sink.copy(from: pending.url(of: file.id))
            } else {
                try await fetchBytes(of: file, into: sink)
            }
        } catch {
            sink.discard()
            throw error
        }
        let written: ResponseSink.Written
        do throws(ServiceError) {
            written = try sink.finish()
        } catch {
            sink.discard()
            throw error
        }
        guard written.bytes == file.size, written.sha256 == file.sha256 else {
            sink.discard()
            throw ServiceError(
                .fileFailed(
                    expected: "\(file.size) bytes with SHA-256 \(file.sha256)",
                    found: "\(written.bytes) bytes with SHA-256 \(written.sha256)"))
        }
        // rename(2): atomic, over a file there or not (FileManager's replace needs one there).
        guard rename(partial.path, destination.path) == 0 else {
            let reason = String(cString: strerror(errno))
            sink.discard()
            throw ServiceError(
                .fileFailed(expected: "a destination that can be written", found: "'\(destination.path)': \(reason)"))
        }
    }

    /// GETs the file's bytes from its location into `sink`. A location learnt earlier that the
    /// server no longer serves (the file was uploaded again, under a new stored name) is asked
    /// for again, once.
    private func fetchBytes(of file: ServiceFile, into sink: ResponseSink) async throws(ServiceError) {
        for attempt in 0..<2 {
            let known = fileLocations.withLock { $0[file.id] }
            let location = try await location(of: file)
            var request = HTTPClient.Request(method: "GET", url: location)
            request.sink = sink
            // The location is the server's static files: no credentials go with it.
            let response = try await http.send(request)
            if response.status == 200 { return }
            if response.status == 404, attempt == 0, known != nil {
                // The next attempt's send starts the sink's file again.
                fileLocations.withLock { $0[file.id] = nil }
                continue
            }
            throw response.status == 404 ? ServiceError(.notFound) : ServiceError(.httpStatus(response.status, ""))
        }
    }

    /// Where the server serves the bytes of `file`, as its record in ``filesCollection`` says
    /// (asked once per file and service; an upload through this service tells it).
    ///
    /// ```swift
    /// let url = try await service.location(of: photo)    // the seed's `file.url`
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound`` when the server has no such
    ///   file (or this user may not read its record), ``ServiceError/Code/invalidResponse`` for a
    ///   location on another origin than the service's, ``ServiceError/Code/invalidModel`` for an
    ///   id the server cannot have given, and the network and server errors.
    /// - Complexity: O(1) when known, else one request.
    public func location(of file: ServiceFile) async throws(ServiceError) -> URL {
        if let known = fileLocations.withLock({ $0[file.id] }) { return known }
        guard RecordCodec.isValidId(file.id) else {
            throw ServiceError(.invalidModel(expected: "a file id of letters, digits, '_' and '-'", found: "'\(file.id)'"))
        }
        let record = RecordID(collection: Self.filesCollection, id: file.id)
        let response = try await send("GET", path: recordPath(record), body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(record)
        }
        let answer = try Self.json(response.body, record: record)
        guard let attachment = answer["data"]?["attachment"], case .object = attachment else {
            // A record of the collection without a file: none is there.
            throw ServiceError(.notFound).about(record)
        }
        let location = try servedLocation(attachment, record: record)
        fileLocations.withLock { $0[file.id] = location }
        return location
    }

    /// Learns where the files of `files` that this service does not know yet are served, 100 per
    /// request (Kinto's `in_id` list) instead of one each: what a batch download does first.
    /// Files waiting for their upload here, and files the server lacks, are left to the download,
    /// which copies the first and reports the second as ``ServiceError/Code/notFound``.
    ///
    /// - Complexity: O(*n*) in the files, plus a request per 100 unknown ones.
    func learnLocations(of files: [ServiceFile]) async throws(ServiceError) {
        let pending = pendingFiles
        var unknown: [String] = []
        var seen = Set<String>()
        let known = fileLocations.withLock { $0 }
        for file in files
        where known[file.id] == nil && !pending.contains(file.id) && RecordCodec.isValidId(file.id)
            && seen.insert(file.id).inserted
        {
            unknown.append(file.id)
        }
        for start in stride(from: 0, to: unknown.count, by: 100) {
            let ids = unknown[start..<min(start + 100, unknown.count)]
            let parameters = [("in_id", ids.joined(separator: ",")), ("_fields", "attachment"), ("_limit", "100")]
            let response = try await send(
                "GET", path: collectionPath(Self.filesCollection) + "?" + Self.encode(parameters), body: nil)
            guard response.status == 200 else {
                throw Self.failure(status: response.status, body: response.body, headers: response.headers)
            }
            let answer = try Self.json(response.body, record: nil)
            guard case .array(let records)? = answer["data"] else {
                throw ServiceError.invalidResponse(
                    at: "data", expected: "a list of records", found: Self.describe(answer["data"]), record: nil)
            }
            var learnt: [String: URL] = [:]
            for record in records {
                guard case .string(let id)? = record["id"], ids.contains(id), let attachment = record["attachment"],
                    case .object = attachment
                else { continue }
                learnt[id] = try servedLocation(attachment, record: RecordID(collection: Self.filesCollection, id: id))
            }
            fileLocations.withLock { $0.merge(learnt) { _, new in new } }
        }
    }

    /// Deletes `file`: on the server (its record, and with it the stored bytes), and on this
    /// device if it is waiting for its upload. A file already gone is no error.
    ///
    /// ```swift
    /// try await service.delete(photo)
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/invalidModel`` for an id the server
    ///   cannot have given, and the network and server errors.
    /// - Complexity: One request.
    public func delete(_ file: ServiceFile) async throws(ServiceError) {
        let record = RecordID(collection: Self.filesCollection, id: file.id)
        guard RecordCodec.isValidId(file.id) else {
            throw ServiceError(.invalidModel(expected: "a file id of letters, digits, '_' and '-'", found: "'\(file.id)'"))
        }
        let response = try await send("DELETE", path: recordPath(record), body: nil)
        guard response.status == 200 || response.status == 404 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(record)
        }
        // Only now: a delete that fails leaves a pending file pending, so that a record still
        // naming it never goes out without it.
        pendingFiles.remove(file.id)
        fileLocations.withLock { $0[file.id] = nil }
    }

    // MARK: Helpers

    /// A name that fits in the multipart header as it is: no quotes, backslashes or control
    /// characters (line breaks included).
    static func checkFileName(_ name: String) throws(ServiceError) {
        let unfit = name.unicodeScalars.contains { $0 == "\"" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7f }
        guard !name.isEmpty, !unfit else {
            throw ServiceError(
                .invalidModel(expected: "a file name without quotes, backslashes or control characters", found: "'\(name)'"))
        }
    }

    /// A media type that fits in the multipart header: `type/subtype` of token characters, with
    /// parameters (`; charset=utf-8`) but no control characters.
    static func checkContentType(_ type: String) throws(ServiceError) {
        let parts = type.split(separator: "/", maxSplits: 1)
        let fits =
            parts.count == 2 && !parts[0].isEmpty && parts[0].unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 }
            && !type.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f || !$0.isASCII }
        guard fits else {
            throw ServiceError(.invalidModel(expected: "a media type such as 'image/png'", found: "'\(type)'"))
        }
    }

    /// Writes the multipart body of an upload of `source` to `body`, a piece at a time; returns
    /// the bytes' length and SHA-256, and the length of the body's head (before the bytes).
    static func writeMultipart(from source: UploadSource, to body: URL, boundary: String, name: String, contentType: String)
        throws(ServiceError) -> (size: Int64, sha256: String, head: Int64)
    {
        // Readable by the owner only: it is a copy of the file, which may be private.
        guard FileManager.default.createFile(atPath: body.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let output = try? FileHandle(forWritingTo: body)
        else {
            throw ServiceError(.fileFailed(expected: "a temporary file that can be written", found: "'\(body.path)'"))
        }
        defer { try? output.close() }
        let head =
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"\(name)\"\r\n"
            + "Content-Type: \(contentType)\r\n\r\n"
        func put(_ text: String) throws(ServiceError) {
            do {
                try output.write(contentsOf: Data(text.utf8))
            } catch {
                throw ServiceError(
                    .fileFailed(expected: "a temporary file that can be written", found: "'\(body.path)': \(error)"))
            }
        }
        var hash = SHA256()
        try put(head)
        let size = try source.write(to: output, hashing: &hash)
        try put("\r\n--\(boundary)--\r\n")
        return (size, hash.hexDigest(), Int64(head.utf8.count))
    }

    /// Where the server serves an uploaded file, from its answer, which must describe the bytes
    /// sent.
    func uploadedLocation(_ answer: ModelValue, record: RecordID, size: Int64, sha256: String) throws(ServiceError)
        -> URL
    {
        let location = try servedLocation(answer, record: record)
        guard case .string(let hash)? = answer["hash"], hash.lowercased() == sha256 else {
            throw ServiceError.invalidResponse(
                at: "hash", expected: "the SHA-256 of the bytes sent, \(sha256)", found: Self.describe(answer["hash"]),
                record: record)
        }
        guard case .int(let stored)? = answer["size"], stored == size else {
            throw ServiceError.invalidResponse(
                at: "size", expected: "the length sent, \(size)", found: Self.describe(answer["size"]), record: record)
        }
        return location
    }

    /// The `location` of an attachment's description, resolved against the service's URL (the
    /// plugin gives a path when its `base_url` is one, so that each device reaches the files by
    /// the name it reaches the server by); it must be on the service's origin.
    func servedLocation(_ attachment: ModelValue, record: RecordID) throws(ServiceError) -> URL {
        guard case .string(let text)? = attachment["location"],
            let location = URL(string: text, relativeTo: baseURL)?.absoluteURL
        else {
            throw ServiceError.invalidResponse(
                at: "location", expected: "a URL", found: Self.describe(attachment["location"]), record: record)
        }
        guard SessionDelegate.sameOrigin(location, baseURL) else {
            throw ServiceError.invalidResponse(
                at: "location", expected: "a URL on \(HTTPClient.origin(of: baseURL))", found: "'\(text)'", record: record)
        }
        return location
    }

    /// The error of a refused upload: Kinto's attachment plugin answers 400 with a message for a
    /// file too large or of a kind it does not take; 413 is a proxy's or server's size limit.
    static func fileFailure(_ response: HTTPClient.Response) -> ServiceError {
        let body = (try? ModelValue(json: response.body)) ?? .null
        let message = body["message"]?.stringValue ?? ""
        if response.status == 413 || (response.status == 400 && message.contains("exceeds the limit")) {
            return ServiceError(.fileTooLarge(message.isEmpty ? "HTTP \(response.status)" : message))
        }
        if response.status == 400 && message.contains("extension is not allowed") {
            return ServiceError(.unsupportedFileType(message))
        }
        return failure(status: response.status, body: body, headers: response.headers)
    }
}
