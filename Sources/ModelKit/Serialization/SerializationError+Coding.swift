import Foundation

// Errors that a type's own `encode(to:)` or `init(from:)` throws while a model's properties are
// written or read, as serialization errors that say which model and where.

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

extension SerializationError {
    /// `error`, thrown while encoding the properties of the model at `modelIndex`, as a
    /// serialization error that says where.
    init(encoding error: any Error, modelIndex: Int, modelName: String) {
        if let error = error as? SerializationError {
            self = error.located(modelIndex: modelIndex, modelName: modelName)
        } else if let error = error as? EncodingError {
            self.init(encodingError: error, modelIndex: modelIndex, modelName: modelName)
        } else {
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, path: "properties",
                expected: "properties that encode", found: "error \(error)")
        }
    }

    init(encodingError: EncodingError, modelIndex: Int, modelName: String) {
        switch encodingError {
        case .invalidValue(let value, let context):
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, path: describe(context.codingPath),
                expected: "a value that can be encoded", found: "\(type(of: value)): \(context.debugDescription)")
        @unknown default:
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, expected: "a value that can be encoded",
                found: "\(encodingError)")
        }
    }
}
