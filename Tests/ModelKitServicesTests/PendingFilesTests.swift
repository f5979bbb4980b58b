import Foundation
import ModelKit
import ModelKitTestSupport
import ServiceTestModels
import Testing

@testable import ModelKitServices

/// Files made offline (issue #35): kept in the service's pending-files folder, usable at once,
/// uploaded by the save or sync that first writes a record naming them, before that record.
@Suite("Files made offline, uploaded by save and sync", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct PendingFilesTests {
    /// A device: a store and a sync of documents, and a service whose pending files are in a
    /// folder of the device's.
    final class Device {
        let folder: URL
        let service: KintoService
        var store: ModelStore
        var sync: ModelSync

        init(service: KintoService, folder: URL? = nil) throws {
            try? ModelRegistry.register(Document.self)
            self.service = service
            self.folder = try folder ?? FilesTests.folder()
            service.pendingFilesFolder = self.folder.appendingPathComponent("pending")
            store = try ModelStore(url: self.folder.appendingPathComponent("device.store"))
            sync = ModelSync(store: store, service: service, models: [Document.self])
        }

        var context: ModelContext { store.context }
        var pendingNames: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: service.pendingFilesFolder.path)) ?? []).sorted()
        }

        /// Closes the store and opens it again with a new service of the same folder, as a
        /// relaunch does.
        func relaunch(service: KintoService) throws -> Device {
            store.close()
            return try Device(service: service, folder: folder)
        }

        func document(_ objectId: String) -> Document? { context.model(Document.self, objectId: objectId) }
    }

    /// The bytes of `file` as `service` downloads them.
    static func downloaded(_ file: ServiceFile, by service: KintoService) async throws -> Data {
        let folder = try FilesTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent(file.name)
        try await service.download(file, to: destination)
        return try Data(contentsOf: destination)
    }

    @Test("A file made offline needs no request, downloads from its copy, and a save uploads it before the record")
    func saveUploadsFirst() async throws {
        let service = try await FilesTests.service()
        let device = try Device(service: service)
        defer { try? FileManager.default.removeItem(at: device.folder) }
        let source = device.folder.appendingPathComponent("scan.pdf")
        let bytes = FilesTests.bytes(150_000, seed: 21)
        try bytes.write(to: source)

        let before = service.metrics.requests
        let file = try service.makeFile(contentsOf: source, contentType: "application/pdf")
        // The app's own file may go: the service keeps a copy.
        try FileManager.default.removeItem(at: source)
        #expect(file.name == "scan.pdf" && file.size == 150_000)
        #expect(file.sha256 == (try FilesTests.systemSHA256(service.pendingFiles.url(of: file.id))))
        #expect(service.isPending(file) && device.pendingNames == [file.id])
        #expect(try await Self.downloaded(file, by: service) == bytes)
        #expect(service.metrics.requests == before, "made and read back without the server")

        let document = Document.instance(objectId: "d1", in: device.context)
        document.title = "Scan"
        document.file = file
        try await service.save(document)
        #expect(!service.isPending(file) && device.pendingNames.isEmpty)
        #expect(document.file == file, "the upload changes no model")

        // Another device, with a service of its own, fetches the record and downloads the file.
        let server = try await KintoServer.shared.value
        let reader = server.service(bucket: service.bucket)
        let context = ModelContext()
        let fetched = Document.instance(objectId: "d1", in: context)
        try await reader.fetch(fetched)
        #expect(fetched.file == file)
        #expect(try await Self.downloaded(file, by: reader) == bytes)
    }

    @Test("Files made offline and saved in the store survive a relaunch, and the sync after it uploads them, then pushes")
    func syncAfterRelaunch() async throws {
        let service = try await FilesTests.service()
        var device = try Device(service: service)
        defer { try? FileManager.default.removeItem(at: device.folder) }
        let one = try service.makeFile(Data("one".utf8), name: "one.txt", contentType: "text/plain")
        let two = try service.makeFile(FilesTests.bytes(70_000, seed: 22), name: "two.bin")
        let document = Document.instance(objectId: "d2", in: device.context)
        document.file = one
        document.attachments = [one, two]
        try await device.store.save()
        #expect(device.pendingNames == [one.id, two.id].sorted())

        let server = try await KintoServer.shared.value
        let relaunched = server.service(bucket: service.bucket)
        device = try device.relaunch(service: relaunched)
        #expect(relaunched.isPending(one) && relaunched.isPending(two))
        let report = try await device.sync.sync()
        #expect(report.pushed == 1)
        #expect(device.pendingNames.isEmpty)

        let reader = try Device(
            service: server.service(bucket: service.bucket))
        defer { try? FileManager.default.removeItem(at: reader.folder) }
        try await reader.sync.sync()
        let pulled = try #require(reader.document("d2"))
        #expect(pulled.file == one && pulled.attachments == [one, two])
        #expect(try await Self.downloaded(two, by: reader.service) == FilesTests.bytes(70_000, seed: 22))
    }

    @Test("A file upload that fails stops the push before any record: the record waits, and the next sync sends both")
    func failedUploadWritesNoRecord() async throws {
        // Each of the service's 3 tries of the upload fails.
        let failed = try await Self.expectUploadRefused(
            by: ["match": "POST /v1/buckets", "action": "status", "status": 503, "times": 3], tries: 3)
        #expect(failed?.code == .httpStatus || failed?.code == .serverError, "\(String(describing: failed))")
    }

    /// Saves a document naming a pending file on a device whose service goes through a proxy,
    /// has the proxy refuse uploads by `rule`, and checks what a refused upload must leave: the
    /// sync fails after `tries` upload requests and sends no record, the file and the record stay
    /// pending, and the next sync sends both and the file comes back intact. Returns the failed
    /// sync's error, for the caller to check its code.
    static func expectUploadRefused(by rule: ModelValue, tries: Int) async throws -> ServiceError? {
        let (service, proxy) = try await FilesTests.throughProxy()
        defer { proxy.stop() }
        let device = try Device(service: service)
        defer { try? FileManager.default.removeItem(at: device.folder) }
        let file = try service.makeFile(Data("later".utf8), name: "later.txt", contentType: "text/plain")
        let document = Document.instance(in: device.context)
        document.file = file
        try await device.store.save()

        try await proxy.inject([rule])
        let failed = await #expect(throws: ServiceError.self) { try await device.sync.sync() }
        #expect(try await proxy.count("POST /v1/buckets") == tries)
        #expect(try await proxy.count("POST /v1/batch") == 0, "no record was sent")
        #expect(service.isPending(file) && device.sync.pendingChangeCount == 1)
        #expect(device.pendingNames == [file.id])

        let report = try await device.sync.sync()
        #expect(report.pushed == 1 && !service.isPending(file))
        let server = try await KintoServer.shared.value
        #expect(try await Self.downloaded(file, by: server.service(bucket: service.bucket)) == Data("later".utf8))
        return failed
    }

    @Test("A pending copy whose bytes changed is refused with the file's name, and the save writes nothing")
    func changedCopyIsRefused() async throws {
        let service = try await FilesTests.service()
        let device = try Device(service: service)
        defer { try? FileManager.default.removeItem(at: device.folder) }
        let file = try service.makeFile(Data("original".utf8), name: "note.txt", contentType: "text/plain")
        try Data("tampered".utf8).write(to: service.pendingFiles.url(of: file.id))
        let document = Document.instance(in: device.context)
        document.file = file
        let error = await #expect(throws: ServiceError.self) { try await service.save(document) }
        #expect(error?.code == .fileFailed && "\(error!)".contains("note.txt"), "\(String(describing: error))")
        #expect(document.objectId == nil && document.hasChanges, "as before the save")
        #expect(service.isPending(file))
    }

    @Test("A file not pending here uploads nothing; a file deleted while pending is gone from the folder too")
    func notPendingAndDeleted() async throws {
        let service = try await FilesTests.service()
        let device = try Device(service: service)
        defer { try? FileManager.default.removeItem(at: device.folder) }
        let uploaded = try await service.upload(Data("up".utf8), name: "up.txt")
        // A first save, which also reads the server's batch limit.
        let first = Document.instance(objectId: "first", in: device.context)
        first.title = "First"
        try await service.save(first)
        let before = service.metrics.requests
        try await service.upload(uploaded)
        #expect(service.metrics.requests == before)
        // A record naming a file of another device's is written as it is, with no upload.
        let document = Document.instance(objectId: "d4", in: device.context)
        document.file = ServiceFile(
            id: "elsewhere", name: "x.txt", contentType: "text/plain", size: 1, sha256: String(repeating: "a", count: 64))
        try await service.save(document)
        #expect(service.metrics.requests == before + 1)

        let pending = try service.makeFile(Data("gone".utf8), name: "gone.txt")
        try await service.delete(pending)
        #expect(!service.isPending(pending) && device.pendingNames.isEmpty)
        // A partial copy left by a crash an hour ago is cleared when a service lists the folder;
        // a young one may be another service's copy in progress, and stays.
        let crashed = service.pendingFilesFolder.appendingPathComponent(".crashed")
        let young = service.pendingFilesFolder.appendingPathComponent(".young")
        try Data("half".utf8).write(to: crashed)
        try Data("half".utf8).write(to: young)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: crashed.path)
        let server = try await KintoServer.shared.value
        let relaunched = server.service(bucket: service.bucket)
        relaunched.pendingFilesFolder = service.pendingFilesFolder
        let newer = try relaunched.makeFile(Data("new".utf8), name: "new.txt")
        let sixth = Document.instance(objectId: "d6", in: device.context)
        sixth.file = newer
        // A save lists the folder for the files its records name.
        try await relaunched.save(sixth)
        #expect(!relaunched.isPending(pending) && !relaunched.isPending(newer))
        #expect(device.pendingNames == [".young"])
    }

    @Test("A device that reaches the server by another name downloads a file another device uploaded")
    func anotherHostName() async throws {
        let service = try await FilesTests.service()
        let file = try await service.upload(Data("by name".utf8), name: "name.txt")
        let server = try await KintoServer.shared.value
        var components = try #require(URLComponents(url: server.url, resolvingAgainstBaseURL: false))
        components.host = "localhost"
        let byName = KintoService(
            url: try #require(components.url), bucket: service.bucket, user: server.user, password: server.password,
            timeout: .seconds(120))
        let location = try await byName.location(of: file)
        #expect(location.host == "localhost")
        #expect(try await Self.downloaded(file, by: byName) == Data("by name".utf8))
    }

    @Test("A delete that cannot reach the server keeps the pending copy; a service sharing the folder sees files made by another")
    func deleteOfflineAndSharedFolder() async throws {
        let service = try await FilesTests.service()
        let device = try Device(service: service)
        defer { try? FileManager.default.removeItem(at: device.folder) }
        // A port nothing listens on: the delete fails, and the copy stays.
        let offline = KintoService(
            url: URL(string: "http://127.0.0.1:9/v1")!, bucket: service.bucket, retry: RetryPolicy(maximumAttempts: 1))
        offline.pendingFilesFolder = service.pendingFilesFolder
        let kept = try offline.makeFile(Data("kept".utf8), name: "kept.txt")
        await #expect(throws: ServiceError.self) { try await offline.delete(kept) }
        #expect(offline.isPending(kept) && service.isPending(kept))

        // The service saw the folder before the file was made, and still uploads it with the record.
        let document = Document.instance(objectId: "d5", in: device.context)
        document.file = kept
        try await service.save(document)
        #expect(!offline.isPending(kept) && device.pendingNames.isEmpty)
        let server = try await KintoServer.shared.value
        let reader = server.service(bucket: service.bucket)
        #expect(try await Self.downloaded(kept, by: reader) == Data("kept".utf8))
    }
}
