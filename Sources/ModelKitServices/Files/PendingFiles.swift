import Foundation
import ModelKit

#if canImport(Glibc)
    import Glibc
#endif

// Files made on this device and not uploaded yet: their bytes wait in a folder of the service's,
// one file per id, until a save or a sync writes a record that names them (or the app uploads
// them). The folder is the whole state: what is in it survives a relaunch, and a file leaves it
// only once the server holds its bytes (several services, even in several processes, may share
// it: nothing about it is kept in memory). Only ids in this folder are ever uploaded from it, so a
// record from the server that names a file cannot make this device send anything else.

final class PendingFiles: Sendable {
    let folder: URL

    init(folder: URL) {
        self.folder = folder
    }

    /// Where the bytes of the pending file `id` are.
    func url(of id: String) -> URL { folder.appendingPathComponent(id) }

    /// How old a partial copy must be before a listing removes it: one that young may be another
    /// service's copy in progress (two services, or two processes, can share a folder).
    static let abandonedAge: TimeInterval = 3600

    /// The ids waiting, read from the folder each time (never from a copy in memory, which
    /// another service sharing the folder would not update). Partial copies that a crash left
    /// are removed.
    ///
    /// - Complexity: O(*n*) in the folder's files (none when the folder does not exist).
    var waiting: Set<String> {
        let fileManager = FileManager.default
        guard let names = try? fileManager.contentsOfDirectory(atPath: folder.path) else { return [] }
        var listed = Set<String>()
        for name in names {
            if name.hasPrefix(".") {
                let partial = folder.appendingPathComponent(name)
                let modified = (try? fileManager.attributesOfItem(atPath: partial.path))?[.modificationDate] as? Date
                if let modified, -modified.timeIntervalSinceNow > Self.abandonedAge {
                    try? fileManager.removeItem(at: partial)
                }
            } else if RecordCodec.isValidId(name) {
                listed.insert(name)
            }
        }
        return listed
    }

    /// Whether the file `id` waits here.
    ///
    /// - Complexity: O(1): one `stat`.
    func contains(_ id: String) -> Bool {
        RecordCodec.isValidId(id) && FileManager.default.fileExists(atPath: url(of: id).path)
    }

    /// Puts a copy of the bytes of `source` in the folder under a new id; returns the file they
    /// make, with their length and hash.
    func add(_ source: KintoService.UploadSource, name: String, contentType: String) throws(ServiceError) -> ServiceFile {
        var random = RandomUUIDs()
        let id = random.makeString().lowercased()
        let partial = folder.appendingPathComponent(".\(id)")
        let fileManager = FileManager.default
        do {
            try fileManager.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw ServiceError(.fileFailed(expected: "a folder for pending files", found: "'\(folder.path)': \(error)"))
        }
        guard fileManager.createFile(atPath: partial.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let output = try? FileHandle(forWritingTo: partial)
        else {
            throw ServiceError(.fileFailed(expected: "a pending file that can be written", found: "'\(partial.path)'"))
        }
        var hash = SHA256()
        let size: Int64
        do throws(ServiceError) {
            defer { try? output.close() }
            size = try source.write(to: output, hashing: &hash)
            do {
                try output.synchronize()
            } catch {
                throw ServiceError(.fileFailed(expected: "a pending file that can be written", found: "\(error)"))
            }
        } catch {
            try? fileManager.removeItem(at: partial)
            throw error
        }
        // Under its id only once whole: a crash before leaves a partial copy, never a pending
        // file with part of its bytes.
        guard rename(partial.path, url(of: id).path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? fileManager.removeItem(at: partial)
            throw ServiceError(.fileFailed(expected: "a pending file that can be written", found: "'\(folder.path)': \(reason)"))
        }
        Self.synchronizeFolder(folder)
        return ServiceFile(id: id, name: name, contentType: contentType, size: size, sha256: hash.hexDigest())
    }

    /// Forgets the pending file `id` and removes its bytes (it was uploaded, or deleted).
    func remove(_ id: String) {
        try? FileManager.default.removeItem(at: url(of: id))
    }

    /// Flushes the folder's entries to disk, so that a file renamed into it is still there
    /// after a power cut (the store that names it may be saved next).
    static func synchronizeFolder(_ folder: URL) {
        let descriptor = open(folder.path, O_RDONLY)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    /// The pending files named in `writes` (their `File` objects, found wherever they are in the
    /// fields), each once.
    ///
    /// - Complexity: O(1) when no file is pending; else O(*n*) in the size of the fields that
    ///   contain a `File` object.
    func named(in writes: [RecordWrite]) -> [ServiceFile] {
        let waiting = self.waiting
        guard !waiting.isEmpty else { return [] }
        let marker = Data(#""File""#.utf8)
        var found: [ServiceFile] = []
        var seen = Set<String>()
        for write in writes {
            let fields: RecordFields
            switch write {
            case .create(_, let given), .update(_, let given, _): fields = given
            case .delete: continue
            }
            guard fields.jsonData.range(of: marker) != nil, let value = try? ModelValue(json: fields.jsonData) else {
                continue
            }
            Self.files(in: value) { file in
                if waiting.contains(file.id), seen.insert(file.id).inserted { found.append(file) }
            }
        }
        return found
    }

    /// Calls `body` with each file object in `value`, at any depth.
    private static func files(in value: ModelValue, _ body: (ServiceFile) -> Void) {
        switch value {
        case .object(let object):
            if object["__type"] == .string(ServiceFile.typeTag), case .string(let id)? = object["id"],
                case .string(let name)? = object["name"], case .string(let contentType)? = object["contentType"],
                case .int(let size)? = object["size"], case .string(let sha256)? = object["sha256"]
            {
                body(ServiceFile(id: id, name: name, contentType: contentType, size: size, sha256: sha256))
            } else {
                for (_, member) in object { files(in: member, body) }
            }
        case .array(let elements):
            for element in elements { files(in: element, body) }
        default:
            break
        }
    }
}
