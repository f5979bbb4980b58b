import Foundation
import ModelKit

/// The JSON body of a Kinto `POST /batch` for some writes, written as text: each record's fields
/// (``RecordFields/jsonData``) are copied in as they are, never parsed or rebuilt.
///
/// A create is a `PUT` with `If-None-Match: *`, an update a `PUT` with `If-Match` and the expected
/// version, a delete a `DELETE`, with `If-Match` when a version is expected.
struct BatchBody {
    private(set) var bytes: [UInt8] = []

    /// - Complexity: O(*n*) in the size of the writes' fields.
    init(_ writes: some Collection<RecordWrite>, path: (RecordID) -> String) {
        var capacity = 16
        for write in writes { capacity += 160 + (write.fields?.jsonData.count ?? 0) }
        bytes.reserveCapacity(capacity)
        append(#"{"requests":["#)
        var first = true
        for write in writes {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            switch write {
            case .create(let id, let fields):
                request("PUT", path(id))
                append(#","headers":{"If-None-Match":"*"},"body":{"data":"#)
                bytes.append(contentsOf: fields.jsonData)
                append("}}")
            case .update(let id, let fields, let expected):
                request("PUT", path(id))
                append(#","headers":{"If-Match":"#)
                string("\"\(expected.rawValue)\"")
                append(#"},"body":{"data":"#)
                bytes.append(contentsOf: fields.jsonData)
                append("}}")
            case .delete(let id, let expected):
                request("DELETE", path(id))
                append(#","headers":{"#)
                if let expected {
                    append(#""If-Match":"#)
                    string("\"\(expected.rawValue)\"")
                }
                append("}}")
            }
        }
        append("]}")
    }

    var data: Data { Data(bytes) }

    /// `{"method":…,"path":…`, the start of a request.
    private mutating func request(_ method: StaticString, _ path: String) {
        append(#"{"method":""#)
        append(method)
        append(#"","path":"#)
        string(path)
    }

    private mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `text` as a JSON string.
    private mutating func string(_ text: String) {
        bytes.append(contentsOf: KintoService.json(.string(text)).utf8)
    }
}

extension RecordWrite {
    /// The fields written, for a create or an update.
    var fields: RecordFields? {
        switch self {
        case .create(_, let fields), .update(_, let fields, _): fields
        case .delete: nil
        }
    }
}
