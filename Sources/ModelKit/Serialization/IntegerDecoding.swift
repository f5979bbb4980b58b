// The decoding containers of ModelKit's decoders read every fixed-width integer type the same
// way: a generic read that checks the value fits. These protocols turn Codable's ten integer
// requirements per container into that one generic method.

/// A keyed decoding container whose integer requirements all go through ``decodeInteger(_:forKey:)``.
protocol IntegerKeyedDecodingContainer: KeyedDecodingContainerProtocol {
    func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type, forKey key: Key) throws -> I
}

extension IntegerKeyedDecodingContainer {
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decodeInteger(type, forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decodeInteger(type, forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decodeInteger(type, forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decodeInteger(type, forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decodeInteger(type, forKey: key) }
}

/// An unkeyed decoding container whose integer requirements all go through ``decodeInteger(_:)``.
protocol IntegerUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    mutating func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I
}

extension IntegerUnkeyedDecodingContainer {
    mutating func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }
}

/// A single-value decoding container whose integer requirements all go through
/// ``decodeInteger(_:)``.
protocol IntegerSingleValueDecodingContainer: SingleValueDecodingContainer {
    func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I
}

extension IntegerSingleValueDecodingContainer {
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }
}
