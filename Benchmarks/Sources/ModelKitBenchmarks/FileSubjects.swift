import BlogFixture
import Foundation
import ModelKit

// The subjects of the write and load benchmarks: ModelKit, and each peer in its fastest natural
// form (the Codable coders encode straight to `Data`, written atomically as ModelKit writes; the
// loaders read the file with `Data(contentsOf:)` and decode it).

enum FileSubjects {
    static var jsonWriters: [FileWriter] {
        let encoder = JSONEncoder()
        return [
            modelKit(.json),
            codableWriter("JSONEncoder", "record.json", buildRecordFile) { try encoder.encode($0) },
            codableWriter("JSONEncoder (compact)", "compact.json", buildCompactFile) { try encoder.encode($0) },
        ]
    }

    static var jsonLoaders: [FileLoader] {
        let decoder = JSONDecoder()
        return [
            modelKitLoader(.json),
            codableLoader("JSONDecoder", writer: jsonWriters[1]) { try decoder.decode(RecordFile.self, from: $0) },
            codableLoader("JSONDecoder (compact)", writer: jsonWriters[2]) { try decoder.decode(CompactFile.self, from: $0) },
        ]
    }

    static var plistWriters: [FileWriter] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return [
            modelKit(.binaryPropertyList),
            codableWriter("PropertyListEncoder", "record.plist", buildRecordFile) { try encoder.encode($0) },
            codableWriter("PropertyListEncoder (compact)", "compact.plist", buildCompactFile) { try encoder.encode($0) },
            keyedArchiver("NSKeyedArchiver", "keyed.plist", .arrayFree, postLimit: Benchmarks.flatArchiveLimit),
            keyedArchiver("NSKeyedArchiver (arrays)", "keyed-arrays.plist", .arrays, postLimit: Benchmarks.slowPeerLimit),
        ]
    }

    static var plistLoaders: [FileLoader] {
        let decoder = PropertyListDecoder()
        let writers = plistWriters
        return [
            modelKitLoader(.binaryPropertyList),
            codableLoader("PropertyListDecoder", writer: writers[1]) { try decoder.decode(RecordFile.self, from: $0) },
            codableLoader("PropertyListDecoder (compact)", writer: writers[2]) { try decoder.decode(CompactFile.self, from: $0) },
            keyedUnarchiver("NSKeyedUnarchiver", writer: writers[3], .arrayFree),
            keyedUnarchiver("NSKeyedUnarchiver (arrays)", writer: writers[4], .arrays),
        ]
    }

    static func modelKit(_ format: PersistenceFormat) -> FileWriter {
        FileWriter(subject: Report.modelKit, fileName: format == .json ? "modelkit.json" : "modelkit.plist") { data, url in
            let context = ModelContext()
            _ = buildModelKitBlog(data, in: context)
            return { try modelKitWrite(context, to: url, format: format) }
        }
    }

    static func modelKitLoader(_ format: PersistenceFormat) -> FileLoader {
        FileLoader(subject: Report.modelKit, writer: modelKit(format)) { data, url, recorder in
            Subject(
                Report.modelKit, recordingPeaksIn: recorder, setup: {},
                body: { _ in try modelKitLoad(from: url, format: format) },
                verify: { context in try verifyLoadedBlog(context, data) })
        }
    }

    /// A Codable peer that builds its structs with `build` and encodes them with `encode`.
    static func codableWriter<File>(
        _ subject: String, _ fileName: String, _ build: @escaping (BlogData) -> File, encode: @escaping (File) throws -> Data
    ) -> FileWriter {
        FileWriter(subject: subject, fileName: fileName) { data, url in
            let file = build(data)
            return { try encode(file).write(to: url, options: .atomic) }
        }
    }

    /// A Codable peer that decodes the file of `writer` with `decode`.
    static func codableLoader<File: PeerBlogFile>(
        _ subject: String, writer: FileWriter, decode: @escaping (Data) throws -> File
    ) -> FileLoader {
        FileLoader(subject: subject, writer: writer) { data, url, recorder in
            Subject(
                subject, recordingPeaksIn: recorder, setup: {}, body: { _ in try decode(Data(contentsOf: url)) },
                verify: { file in try verifyLoadedBlog(file, data) })
        }
    }

    static func keyedArchiver(_ subject: String, _ fileName: String, _ layout: ArchiveLayout, postLimit: Int?) -> FileWriter {
        FileWriter(subject: subject, fileName: fileName, postLimit: postLimit) { data, url in
            let blog = buildArchivedBlog(data, layout: layout)
            return { try writeKeyedArchive(blog, to: url) }
        }
    }

    static func keyedUnarchiver(_ subject: String, writer: FileWriter, _ layout: ArchiveLayout) -> FileLoader {
        FileLoader(subject: subject, writer: writer) { data, url, recorder in
            Subject(
                subject, recordingPeaksIn: recorder, setup: {}, body: { _ in try loadKeyedArchive(from: url) },
                verify: { blog in try verifyLoadedBlog(blog, data, layout: layout) })
        }
    }
}
