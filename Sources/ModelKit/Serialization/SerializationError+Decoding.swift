import Foundation

// Errors a `Decodable` type throws itself while its properties decode, as serialization errors
// that say which model and where.

extension SerializationError {
    init(decodingError: DecodingError, modelIndex: Int, modelName: String) {
        switch decodingError {
        case .typeMismatch(let type, let context):
            self.init(
                .typeMismatch, modelIndex: modelIndex, modelName: modelName, path: describe(context.codingPath),
                expected: "\(type)", found: context.debugDescription)
        case .valueNotFound(let type, let context):
            self.init(
                .valueNotFound, modelIndex: modelIndex, modelName: modelName, path: describe(context.codingPath),
                expected: "a value of type \(type)", found: context.debugDescription)
        case .keyNotFound(let key, let context):
            self.init(
                .valueNotFound, modelIndex: modelIndex, modelName: modelName,
                path: describe(context.codingPath + [key]), expected: "a value for \"\(key.stringValue)\"",
                found: context.debugDescription)
        case .dataCorrupted(let context):
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, path: describe(context.codingPath),
                expected: "valid data", found: context.debugDescription)
        @unknown default:
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, expected: "valid data", found: "\(decodingError)")
        }
    }
}
