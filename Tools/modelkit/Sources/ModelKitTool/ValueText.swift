import Foundation
import ModelKit

/// How values read without types are shown, compared and looked up.
enum Values {
    /// A value for a table cell: strings bare, dates as their ISO text, references as
    /// `Model:id`, arrays as their count; at most 40 characters.
    static func cell(_ value: ModelValue?) -> String {
        let text: String
        switch value {
        case nil, .null?: text = ""
        case .string(let string)?: text = string
        case .bool(let flag)?: text = String(flag)
        case .int(let number)?: text = String(number)
        case .uint(let number)?: text = String(number)
        case .double(let number)?: text = String(number)
        case .date(let date)?: text = ISO8601DateFormatter().string(from: date)
        case .data(let data)?: text = "\(data.count) bytes"
        case .array(let elements)?:
            text =
                elements.count <= 3 && elements.allSatisfy(isScalar)
                ? elements.map { cell($0) }.joined(separator: ", ") : "[\(elements.count)]"
        case .object(let object)?:
            switch object["__type"]?.stringValue {
            case "Date": text = object["iso"]?.stringValue ?? "date"
            case "ModelPointer": text = "\(object["model"]?.stringValue ?? "?"):\(object["modelId"]?.stringValue ?? "?")"
            case "Null": text = ""
            case "Bytes": text = "bytes"
            default: text = value!.jsonString()
            }
        }
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        return flat.count > 40 ? String(flat.prefix(39)) + "…" : flat
    }

    private static func isScalar(_ value: ModelValue) -> Bool {
        switch value {
        case .array, .object: false
        default: true
        }
    }

    /// The value at a sort key: a model's own member (`modelId`, `createdAt`, …) or a dotted path
    /// in its properties.
    static func value(at path: [String], in model: ModelEntry) -> ModelValue {
        var value: ModelValue
        if path.count == 1, ["model", "modelId", "objectId", "createdAt", "updatedAt"].contains(path[0]) {
            return model.value[path[0]] ?? .null
        }
        value = model.properties
        for key in path {
            guard let next = value[key] else { return .null }
            value = next
        }
        return value
    }

    /// Whether two values are the same, whichever form of file each came from (a JSON file's
    /// `{"__type": "Date", …}` and a property list's date).
    static func same(_ a: ModelValue, _ b: ModelValue) -> Bool {
        switch (a, b) {
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x), .object(let y)) where isPlain(x) && isPlain(y):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        case (.object, _), (_, .object), (.array, _), (_, .array):
            if case .object(let x) = a, !isPlain(x) { return ModelValueFilter.compare(a, b) == .orderedSame && !isPlainObject(b) }
            if case .object(let y) = b, !isPlain(y) { return ModelValueFilter.compare(a, b) == .orderedSame && !isPlainObject(a) }
            return false
        default:
            return ModelValueFilter.compare(a, b) == .orderedSame && kindRank(a) == kindRank(b)
        }
    }

    /// An object that is not a tagged date, bytes or null.
    private static func isPlain(_ object: ModelValue.Object) -> Bool {
        !["Date", "Bytes", "Null"].contains(object["__type"]?.stringValue ?? "")
    }

    private static func isPlainObject(_ value: ModelValue) -> Bool {
        if case .object(let object) = value { return isPlain(object) }
        if case .array = value { return true }
        return false
    }

    private static func kindRank(_ value: ModelValue) -> Int {
        switch value {
        case .int, .uint, .double: 1
        default: 0
        }
    }
}
