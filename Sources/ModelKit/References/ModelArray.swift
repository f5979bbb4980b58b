import Foundation

/// A to-many reference: an ordered collection of models it does not retain, stored in
/// `Properties`.
/// The Swift counterpart of `MKitMutableModelArray`.
///
/// ```swift
/// struct Properties: ModelProperties {
///     var posts = ModelArray<Post>()
/// }
///
/// author.posts.append(post)
/// for post in author.posts { print(post.title) }
/// ```
///
/// Elements are not retained (the context retains models), so cycles such as an author holding
/// its posts while each post references its author never leak. An element whose model was removed
/// from its context is skipped when the array is read, and comes back when a model with its id is
/// in the context again. The same model may appear more than once.
///
/// Indices are positions in the stored list; an element that goes away between computing an index
/// and using it makes that index invalid, as with any collection mutated behind your back.
public struct ModelArray<Element: Model> {
    @usableFromInline var references: [ModelRef<Element>]
    /// The context in which elements are resolved; set by the owning model when it hands the array
    /// out. `nil`: elements resolve only among `held`.
    var context: ModelContext? {
        get { link?.context }
        set { link = newValue?.link }
    }
    /// How the array holds its context: not `weak` (see ``ContextLink``).
    private var link: ContextLink?
    /// The models elements resolve among when the context has not got them: those the owner
    /// holds (see ``ModelObject/held``), and `added`.
    var held: [AnyObject] = []
    /// Models added to this array that its context could not adopt (there was none, or they are
    /// in another context): the owner takes them when the array is stored, its context adopting
    /// what it can and the owner holding the rest. Stored arrays keep none.
    var added: [AnyObject] = []

    /// Creates an empty array.
    public init() {
        references = []
    }

    /// Creates an array holding `models`, in order.
    public init<S: Sequence>(_ models: S) where S.Element == Element {
        let models = Array(models)
        references = models.map { ModelRef($0) }
        held = models
        added = models
    }

    /// The ids of all stored references, in order, including those that do not resolve right now,
    /// but not those of models removed from the array's context (see
    /// ``ModelContext/remove(_:)``): a removed model is dropped from every array.
    public var ids: [ModelID] {
        guard let context, context.hasRemovedIds else { return references.compactMap(\.id) }
        return context.withRegistry { registry in
            references.compactMap { reference in reference.id.flatMap { registry.removedIds.contains($0) ? nil : $0 } }
        }
    }

    /// The live elements as an `Array`.
    ///
    /// - Complexity: O(n).
    public var models: [Element] { Array(self) }

    func resolve(at raw: Int) -> Element? {
        references[raw].target(lookupIn: context, held: held)
    }

    /// Prepares the array to resolve its elements where its owner's references resolve.
    @usableFromInline mutating func attach(context: ModelContext?, held: [AnyObject]) {
        self.context = context
        self.held = held
    }

    /// Hands the models added to the array to its owner, before the array is stored: `context`
    /// adopts those it can; the rest are returned, for the owner to hold.
    @usableFromInline mutating func release(to context: ModelContext?) -> [AnyObject] {
        defer {
            held = []
            added = []
        }
        guard let context else { return added }
        return added.filter { ($0 as? any Model).map { !context.adopt($0) } ?? false }
    }
}

extension ModelArray: BidirectionalCollection {
    /// A position in the array's stored references, with the model found there when the index
    /// was made.
    ///
    /// Keeping the model makes an index safe to use after the model went away: subscripting
    /// gives the model it was made for (removed from its context by then, perhaps) instead of
    /// trapping, and it spares the subscript a second resolution.
    public struct Index: Comparable, Hashable {
        @usableFromInline let raw: Int
        /// The element at `raw`; `nil` only for the end index (or a position before the start).
        let element: Element?

        public static func == (lhs: Index, rhs: Index) -> Bool { lhs.raw == rhs.raw }
        public static func < (lhs: Index, rhs: Index) -> Bool { lhs.raw < rhs.raw }
        public func hash(into hasher: inout Hasher) { hasher.combine(raw) }
    }

    /// The position of the first live element.
    ///
    /// - Complexity: O(k), where k is the number of leading references that do not resolve.
    public var startIndex: Index { nextLive(from: 0) }

    public var endIndex: Index { Index(raw: references.count, element: nil) }

    public func index(after i: Index) -> Index { nextLive(from: i.raw + 1) }

    public func index(before i: Index) -> Index {
        var raw = i.raw - 1
        while raw > 0 {
            if let element = resolve(at: raw) { return Index(raw: raw, element: element) }
            raw -= 1
        }
        return Index(raw: 0, element: references.isEmpty ? nil : resolve(at: 0))
    }

    /// The model at `position`: the one the index was made for, even if it has since left its
    /// context.
    ///
    /// - Precondition: `position` is a valid index other than `endIndex`, as for every
    ///   collection (a subscript cannot throw).
    /// - Complexity: O(1).
    public subscript(position: Index) -> Element {
        guard let element = position.element else {
            preconditionFailure("ModelArray index \(position.raw) is out of range (the end index has no element)")
        }
        return element
    }

    private func nextLive(from raw: Int) -> Index {
        var raw = raw
        while raw < references.count {
            if let element = resolve(at: raw) { return Index(raw: raw, element: element) }
            raw += 1
        }
        return endIndex
    }
}

extension ModelArray {
    /// Iterates the live elements, resolving each reference when it is reached. A model removed
    /// from its context while a loop runs (by the loop's own body, say) is skipped rather than
    /// trapping on an index computed before the removal, as the default iterator would.
    public struct Iterator: IteratorProtocol {
        let array: ModelArray
        var raw = 0

        public mutating func next() -> Element? {
            while raw < array.references.count {
                let element = array.resolve(at: raw)
                raw += 1
                if let element { return element }
            }
            return nil
        }
    }

    /// An iterator over the live elements.
    ///
    /// - Complexity: O(1); a whole iteration is O(n).
    public func makeIterator() -> Iterator {
        Iterator(array: self)
    }
}

extension ModelArray: RangeReplaceableCollection {
    /// Replaces the references in `subrange` with references to `newElements`. Models that have
    /// never been in a context join the array's context.
    ///
    /// - Complexity: O(n + m), as `Array.replaceSubrange`; appending is amortized O(1).
    public mutating func replaceSubrange<C: Collection>(_ subrange: Range<Index>, with newElements: C)
    where C.Element == Element {
        // This code is generic and not specialized: every pass over `newElements` looks its
        // types up at run time, so there is one, and an empty subrange (an append) is not
        // walked at all.
        let journal = self.journal
        if let journal, !subrange.isEmpty {
            for raw in subrange.lowerBound.raw..<subrange.upperBound.raw {
                if let id = references[raw].id { journal.removed.append(id) }
            }
        }
        // Lazily mapped: appending one model must not allocate an intermediate array.
        references.replaceSubrange(subrange.lowerBound.raw..<subrange.upperBound.raw, with: newElements.lazy.map { ModelRef($0) })
        for model in newElements { _noteAdded(model) }
    }

    /// Adds a reference to `model` at the end. A model that has never been in a context joins
    /// the array's context.
    ///
    /// ```swift
    /// author.posts.append(post)
    /// ```
    ///
    /// - Complexity: Amortized O(1).
    @inlinable
    public mutating func append(_ model: Element) {
        // Not the default, which goes through `replaceSubrange` with a one-element collection:
        // in code that is not specialized for `Element`, each of the collection types it passes
        // through is looked up at run time, and that cost more than the append. Inlined, the
        // stored array's append is specialized for the app's model type.
        references.append(ModelRef(model))
        _noteAdded(model)
    }

    /// Adds references to `models` at the end, in order.
    ///
    /// - Complexity: Amortized O(m), where m is the number of models added.
    public mutating func append<S: Sequence>(contentsOf models: S) where S.Element == Element {
        for model in models {
            references.append(ModelRef(model))
            _noteAdded(model)
        }
    }

    /// Tells the journal (if a mutation of an array with an inverse opened one) of `model`, and
    /// has the array's context adopt it; the array holds what its context can't. Out of line
    /// (not inlined into ``append(_:)``): adopting is generic work that need not be specialized
    /// into the app's code.
    @usableFromInline mutating func _noteAdded(_ model: Element) {
        journal?.added.append(model)
        if !(context?.adopt(model) ?? false) {
            held.append(model)
            added.append(model)
        }
    }

    public mutating func reserveCapacity(_ n: Int) {
        references.reserveCapacity(n)
    }

    /// Removes every reference. (The default would replace the array with a new one, losing
    /// track of what was removed, which an inverse needs.)
    ///
    /// - Complexity: O(n).
    public mutating func removeAll(keepingCapacity keepCapacity: Bool = false) {
        if let journal { journal.removed += references.compactMap { $0.id } }
        references.removeAll(keepingCapacity: keepCapacity)
    }

    /// Removes the elements for which `shouldBeRemoved` is true; references that don't resolve
    /// (to models not in the context) are not elements, and stay.
    ///
    /// - Complexity: O(n).
    public mutating func removeAll(where shouldBeRemoved: (Element) throws -> Bool) rethrows {
        var kept: [ModelRef<Element>] = []
        var removed: [ModelID] = []
        kept.reserveCapacity(references.count)
        for raw in references.indices {
            if let element = resolve(at: raw), try shouldBeRemoved(element), let id = references[raw].id {
                removed.append(id)
            } else {
                kept.append(references[raw])
            }
        }
        guard !removed.isEmpty else { return }
        journal?.removed += removed
        references = kept
    }
}

extension ModelArray: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: Element...) {
        self.init(elements)
    }
}

extension ModelArray: Equatable {
    /// Two arrays are equal when they refer to the same model ids in the same order.
    public static func == (lhs: ModelArray, rhs: ModelArray) -> Bool {
        lhs.references.map(\.id) == rhs.references.map(\.id)
    }
}

extension ModelArray: Hashable {
    public func hash(into hasher: inout Hasher) {
        for reference in references { hasher.combine(reference.id) }
    }
}

extension ModelArray: CustomStringConvertible {
    public var description: String {
        "ModelArray<\(Element.modelName)>(\(references.count) references)"
    }
}
