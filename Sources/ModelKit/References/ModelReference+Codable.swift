import Foundation

// Codable conformances of references, for encoders other than ModelKit's own (JSONEncoder,
// PropertyListEncoder). ModelKit's serializer does not call these: it writes pointers itself and
// wires them to the instances it loads. Elsewhere a reference is written as a pointer object and
// read back as an id, which resolves through the context when it is read.

private enum PointerKeys: String, CodingKey {
    case type = "__type"
    case model
    case modelId
    case objectId
}

extension ModelRef: Codable {
    public func encode(to encoder: any Encoder) throws {
        guard let id else {
            var container = encoder.singleValueContainer()
            return try container.encodeNil()
        }
        var container = encoder.container(keyedBy: PointerKeys.self)
        try container.encode("ModelPointer", forKey: .type)
        try container.encode(Target.modelName, forKey: .model)
        try container.encode(id, forKey: .modelId)
    }

    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), single.decodeNil() {
            self.init()
            return
        }
        let container = try decoder.container(keyedBy: PointerKeys.self)
        self.init(id: try container.decode(ModelID.self, forKey: .modelId))
    }
}

extension ModelArray: Codable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for reference in references where reference.id != nil {
            try container.encode(reference)
        }
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        var references: [ModelRef<Element>] = []
        while !container.isAtEnd {
            references.append(try container.decode(ModelRef<Element>.self))
        }
        self.init()
        self.references = references
    }
}
