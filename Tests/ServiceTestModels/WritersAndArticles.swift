import Foundation
import ModelKit
import ModelKitServices

// The models of the service tests, shared by the tests (Tests/ModelKitServicesTests) and the
// child processes they start (Tests/SyncKillChild), so that both sides read and write the same
// records: one declaration, in a target of its own because ModelKitTestSupport does not depend
// on ModelKitServices.

/// A writer and their articles, referencing each other: a record of the `Writer` collection.
public final class Writer: ModelObject<Writer.Properties>, RemoteModel {
    public struct Properties: ModelProperties {
        public var name = ""
        public var age = 0
        public var born: Date?
        public var avatar: Data?
        public var articles = ModelArray<Article>()
        public init() {}
    }
}

/// An article of a writer: a record of the `Article` collection.
public final class Article: ModelObject<Article.Properties>, RemoteModel {
    public struct Properties: ModelProperties {
        public var title = ""
        public var author = ModelRef<Writer>()
        public init() {}
    }
}

/// A model with files: a record of the `Document` collection (issue #35).
public final class Document: ModelObject<Document.Properties>, RemoteModel {
    public struct Properties: ModelProperties {
        public var title = ""
        public var file: ServiceFile?
        public var attachments: [ServiceFile] = []
        public init() {}
    }
}
