import ModelKit

// The models of the atomic-write test, shared by the test and the writer child process
// (Tests/PersistenceWriterChild), which write and read the same files.

/// One version of the graph the writer child writes over and over.
public final class Generation: ModelObject<Generation.Properties> {
    public struct Properties: ModelProperties {
        public var number = 0
        public var items = ModelArray<Item>()
        public init() {}
    }
}

/// An item of a ``Generation``, pointing back at it.
public final class Item: ModelObject<Item.Properties> {
    public struct Properties: ModelProperties {
        public var generation = 0
        public var text = ""
        public var owner = ModelRef<Generation>()
        public init() {}
    }
}
