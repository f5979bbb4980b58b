import Foundation

// Declaring a relationship in the default value of a `Properties` field. Outside a probe these
// initializers make the same empty value `ModelRef()`/`ModelArray()` does (one relaxed atomic
// load more), so declaring costs a model nothing. While ModelKit probes the type (once, see
// `RelationshipTable`), they record the declaration and hand out a value it can find in memory.

extension ModelRef {
    /// An empty to-one reference whose inverse is the to-one reference `inverse` of the target
    /// (one-to-one), with the delete rule `deleteRule`.
    ///
    /// ```swift
    /// struct Properties: ModelProperties {      // in Person
    ///     var passport = ModelRef<Passport>(inverse: \Passport.Properties.holder)
    /// }
    /// ```
    ///
    /// Setting either side sets the other. Both sides must name each other.
    public init<Owner: Model>(inverse: WritableKeyPath<Target.Properties, ModelRef<Owner>>, deleteRule: DeleteRule = .nullify) {
        self.init()
        if RelationshipProbe.isActive {
            self = RelationshipProbe.record(
                RelationshipDeclaration(
                    isArray: false, rule: deleteRule, target: Target.self,
                    inverse: .init(keyPath: inverse, access: RelationshipAccess<Target, Owner>.self, isArray: false)))
        }
    }

    /// An empty to-one reference whose inverse is the to-many reference `inverse` of the target
    /// (the "one" side of one-to-many), with the delete rule `deleteRule`.
    ///
    /// ```swift
    /// struct Properties: ModelProperties {      // in Note
    ///     var folder = ModelRef<Folder>(inverse: \Folder.Properties.notes)
    /// }
    /// ```
    public init<Owner: Model>(inverse: WritableKeyPath<Target.Properties, ModelArray<Owner>>, deleteRule: DeleteRule = .nullify) {
        self.init()
        if RelationshipProbe.isActive {
            self = RelationshipProbe.record(
                RelationshipDeclaration(
                    isArray: false, rule: deleteRule, target: Target.self,
                    inverse: .init(keyPath: inverse, access: RelationshipAccess<Target, Owner>.self, isArray: true)))
        }
    }

    /// An empty to-one reference without an inverse, with the delete rule `deleteRule`.
    ///
    /// ```swift
    /// var cover = ModelRef<Attachment>(deleteRule: .cascade)
    /// ```
    public init(deleteRule: DeleteRule) {
        self.init()
        if RelationshipProbe.isActive {
            self = RelationshipProbe.record(
                RelationshipDeclaration(isArray: false, rule: deleteRule, target: Target.self, inverse: nil))
        }
    }
}

extension ModelArray {
    /// An empty to-many reference whose inverse is the to-one reference `inverse` of the element
    /// type (the "many" side of one-to-many), with the delete rule `deleteRule`.
    ///
    /// ```swift
    /// struct Properties: ModelProperties {      // in Folder
    ///     var notes = ModelArray<Note>(inverse: \Note.Properties.folder, deleteRule: .cascade)
    /// }
    /// folder.notes.append(note)                  // note.folder is now folder
    /// ```
    public init<Owner: Model>(inverse: WritableKeyPath<Element.Properties, ModelRef<Owner>>, deleteRule: DeleteRule = .nullify) {
        self.init()
        if RelationshipProbe.isActive {
            self = RelationshipProbe.record(
                RelationshipDeclaration(
                    isArray: true, rule: deleteRule, target: Element.self,
                    inverse: .init(keyPath: inverse, access: RelationshipAccess<Element, Owner>.self, isArray: false)))
        }
    }

    /// An empty to-many reference whose inverse is the to-many reference `inverse` of the element
    /// type (many-to-many), with the delete rule `deleteRule`.
    ///
    /// ```swift
    /// struct Properties: ModelProperties {      // in Note
    ///     var tags = ModelArray<Tag>(inverse: \Tag.Properties.notes)
    /// }
    /// ```
    public init<Owner: Model>(inverse: WritableKeyPath<Element.Properties, ModelArray<Owner>>, deleteRule: DeleteRule = .nullify)
    {
        self.init()
        if RelationshipProbe.isActive {
            self = RelationshipProbe.record(
                RelationshipDeclaration(
                    isArray: true, rule: deleteRule, target: Element.self,
                    inverse: .init(keyPath: inverse, access: RelationshipAccess<Element, Owner>.self, isArray: true)))
        }
    }

    /// An empty to-many reference without an inverse, with the delete rule `deleteRule`.
    ///
    /// ```swift
    /// var attachments = ModelArray<Attachment>(deleteRule: .cascade)
    /// ```
    public init(deleteRule: DeleteRule) {
        self.init()
        if RelationshipProbe.isActive {
            self = RelationshipProbe.record(
                RelationshipDeclaration(isArray: true, rule: deleteRule, target: Element.self, inverse: nil))
        }
    }
}
