import Foundation
import ModelKit

// Files made offline: `makeFile` keeps a copy of the bytes in the service's pending-files folder
// and returns the file at once; a save or a sync that writes a record naming it uploads it first
// (see `PendingFileUploads`), so that no record on the server names a file the server lacks.

/// A backend that keeps files made offline and uploads them before the records that name them.
protocol PendingFileUploads: Sendable {
    /// Uploads the files made on this device that `writes` name and the server lacks.
    func uploadPendingFiles(namedIn writes: [RecordWrite]) async throws(ServiceError)
}

extension KintoService: PendingFileUploads {
    /// The folder where files made with ``makeFile(contentsOf:name:contentType:)`` wait for their
    /// upload, one file each, named by id.
    ///
    /// By default a folder of the user's Application Support (`~/.local/share` on Linux) named
    /// after the service's URL and bucket, so that a relaunch finds the files still to upload.
    /// Set it before making files, to a folder of the app's (beside its store, say); files made
    /// before stay in the folder they were made in, and are uploaded by a service that has that
    /// folder.
    ///
    /// ```swift
    /// service.pendingFilesFolder = storeURL.deletingLastPathComponent().appendingPathComponent("Pending files")
    /// ```
    ///
    /// - Complexity: O(1).
    public var pendingFilesFolder: URL {
        get { pendingFiles.folder }
        set { pendingStore.withLock { $0 = PendingFiles(folder: newValue) } }
    }

    var pendingFiles: PendingFiles {
        pendingStore.withLock { store in
            if let store { return store }
            let made = PendingFiles(folder: defaultPendingFolder())
            store = made
            return made
        }
    }

    private func defaultPendingFolder() -> URL {
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        var hash = SHA256()
        hash.update(Data("\(baseURL.absoluteString) \(bucket)".utf8))
        return base.appendingPathComponent("ModelKit").appendingPathComponent("Pending files")
            .appendingPathComponent(String(hash.hexDigest().prefix(16)))
    }

    /// A file of the bytes at `url`, made at once and without the server: a copy waits in
    /// ``pendingFilesFolder`` until a save or sync writes a record that names the file (or
    /// ``upload(_:progress:)`` is called), which uploads it first.
    ///
    /// ```swift
    /// let photo = try service.makeFile(contentsOf: pictureURL, contentType: "image/png")
    /// post.photo = photo
    /// try await store.save()            // offline: the post and its photo are kept
    /// try await sync.sync()             // later: uploads the photo, then pushes the post
    /// ```
    ///
    /// The copy is what is uploaded, so changing or removing the file at `url` afterwards changes
    /// nothing. Until the upload, ``download(_:to:progress:)`` copies it from there.
    ///
    /// - Parameters:
    ///   - name: The file's name (by default the file's own); its extension tells the server
    ///     what kind of file it is.
    ///   - contentType: The media type; by default `application/octet-stream`.
    /// - Throws: ``ServiceError``: ``ServiceError/Code/fileFailed`` when the file cannot be read
    ///   or the copy written (nothing is left in the folder then),
    ///   ``ServiceError/Code/invalidModel`` for a name with quotes, backslashes or control
    ///   characters or a media type that is not `type/subtype`.
    /// - Complexity: O(*n*) in the file's length (read once: copied and hashed).
    public func makeFile(contentsOf url: URL, name: String? = nil, contentType: String = "application/octet-stream")
        throws(ServiceError) -> ServiceFile
    {
        let name = name ?? url.lastPathComponent
        try Self.checkFileName(name)
        try Self.checkContentType(contentType)
        return try pendingFiles.add(.file(url), name: name, contentType: contentType)
    }

    /// A file of `data`, made at once and without the server:
    /// ``makeFile(contentsOf:name:contentType:)`` with the bytes in memory.
    ///
    /// ```swift
    /// let note = try service.makeFile(Data("hello".utf8), name: "hello.txt", contentType: "text/plain")
    /// ```
    ///
    /// - Throws: What ``makeFile(contentsOf:name:contentType:)`` throws.
    /// - Complexity: O(*n*) in the data's length.
    public func makeFile(_ data: Data, name: String, contentType: String = "application/octet-stream")
        throws(ServiceError) -> ServiceFile
    {
        try Self.checkFileName(name)
        try Self.checkContentType(contentType)
        return try pendingFiles.add(.data(data), name: name, contentType: contentType)
    }

    /// Whether `file` was made on this device and waits for its upload.
    ///
    /// - Complexity: O(1): one look at the folder.
    public func isPending(_ file: ServiceFile) -> Bool {
        pendingFiles.contains(file.id)
    }

    /// Uploads `file` now if it waits for its upload (see
    /// ``makeFile(contentsOf:name:contentType:)``); a file the server has already is left as
    /// it is, without a request.
    ///
    /// ```swift
    /// try await service.upload(photo, progress: progress)
    /// ```
    ///
    /// The bytes sent must be the file's (its length and SHA-256), and once the server holds
    /// them the copy leaves the folder. An upload that failed (or a crash during one) leaves it
    /// there, to upload again: a second upload under the file's id replaces the first.
    ///
    /// - Throws: What ``upload(contentsOf:name:contentType:progress:)`` throws;
    ///   ``ServiceError/Code/fileFailed`` also when the copy is gone or its bytes are no longer
    ///   the file's.
    /// - Complexity: O(*n*) in the file's length, plus one request and its retries; O(1) for a
    ///   file that is not pending.
    public func upload(_ file: ServiceFile, progress: Progress? = nil) async throws(ServiceError) {
        try await upload(file, report: Self.report(to: progress))
    }

    func upload(_ file: ServiceFile, report: ByteReport?) async throws(ServiceError) {
        let pending = pendingFiles
        guard pending.contains(file.id) else { return }
        try Self.checkFileName(file.name)
        try Self.checkContentType(file.contentType)
        _ = try await send(
            .file(pending.url(of: file.id)), id: file.id, name: file.name, contentType: file.contentType,
            expected: file, report: report)
        pending.remove(file.id)
    }

    func uploadPendingFiles(namedIn writes: [RecordWrite]) async throws(ServiceError) {
        let files = pendingFiles.named(in: writes)
        guard !files.isEmpty else { return }
        try await upload(files)
    }
}
