import Foundation

// Running a query: scan the context's models of the type, keep those the predicate accepts,
// order them and cut the window.

extension Query {
    /// The matching models, ordered and windowed.
    ///
    /// - Throws: ``QueryError`` for an unknown key or a condition value of the wrong kind, also
    ///   when no model exists yet.
    /// - Complexity: O(n) in the number of models of the type in the context, plus O(k log k)
    ///   to order k matches.
    public func results() throws(QueryError) -> [M] {
        let matches = try self.matches()
        guard !sortKeys.isEmpty || limitCount != nil || offsetCount > 0 else { return matches }
        return window(try ordered(matches))
    }

    /// How many models match, ignoring `limit` and `offset`, without collecting them.
    ///
    /// - Complexity: O(n) in the number of models of the type in the context.
    public func count() throws(QueryError) -> Int {
        try scan(collecting: false).count
    }

    /// The first matching model in the query's order (after `offset`), or `nil`.
    ///
    /// - Complexity: O(n) in the number of models of the type, plus O(k log k) with an order.
    public func first() throws(QueryError) -> M? {
        try limit(1).results().first
    }

    /// The page of results the window selects, with the number of models that matched in all.
    ///
    /// - Complexity: O(n) in the number of models of the type, plus O(k log k) for k matches.
    public func page() throws(QueryError) -> QueryPage<M> {
        let matches = try self.matches()
        return QueryPage(models: window(try ordered(matches)), totalCount: matches.count)
    }

    // MARK: - Internals

    private func matches() throws(QueryError) -> [M] {
        try scan(collecting: true).matches
    }

    /// How many of the candidates (the models of the type, or those an index gives) match, and
    /// with `collecting`, those that do, in order.
    private func scan(collecting: Bool) throws(QueryError) -> (count: Int, matches: [M]) {
        try guarded {
            let node = predicate.node
            let template = ModelPredicate<M>.Node.template
            try node.validate(template: template, modelName: M.modelName)
            for key in sortKeys { try validate(key, template: template) }
            let context = self.context
            // An index narrows the models to the candidates of one condition; the predicate then
            // decides for each candidate exactly as a scan would.
            let (candidates, indexes) = Self.candidates(for: node, in: context)
            let models = candidates ?? context.models(of: M.self)
            if case .always = node { return (models.count, collecting ? models : []) }
            let program = ScanProgram(node, reader: PropertyValues<M>(), indexes: indexes)
            return try models.withUnsafeBufferPointer { buffer in
                // The models as the class references they are, unretained: a model copied out of
                // the buffer (as a generic loop copies it) is retained and released, which cost
                // more than deciding it.
                try buffer.withMemoryRebound(to: Unmanaged<AnyObject>.self) { objects in
                    try Self.scan(objects, program, collecting: collecting)
                }
            }
        }
    }

    /// The models are decided a batch at a time, and a batch's matches collected right after it:
    /// while they are still in the cache (collecting retains each), and in a loop of this generic
    /// function, which looks up the result array's type once per batch, not once per match.
    private static func scan(_ objects: UnsafeBufferPointer<Unmanaged<AnyObject>>, _ program: ScanProgram, collecting: Bool)
        throws -> (count: Int, matches: [M])
    {
        let batch = 512
        var count = 0
        var matches: [M] = []
        var positions: [Int] = []
        positions.reserveCapacity(batch)
        for start in stride(from: 0, to: objects.count, by: batch) {
            positions.removeAll(keepingCapacity: true)
            let models = UnsafeBufferPointer(rebasing: objects[start..<min(start + batch, objects.count)])
            try program.forEachMatch(in: models) { positions.append(start + $0) }
            count += positions.count
            guard collecting else { continue }
            for position in positions { matches.append(unsafeDowncast(objects[position].takeUnretainedValue(), to: M.self)) }
        }
        return (count, matches)
    }

    /// The candidates an index gives for `node`, or `nil` when no index applies (scan), and the
    /// indexes of the type, brought up to date.
    private static func candidates(for node: ModelPredicate<M>.Node, in context: ModelContext) -> ([M]?, [any MaintainedIndex<M>])
    {
        guard !context.indexRegistry.isEmpty else { return (nil, []) }
        return context.indexRegistry.withIndexes(of: M.self) { indexes in
            guard !indexes.isEmpty else { return (nil, []) }
            for index in indexes { index.refresh() }
            return (plan(node, indexes), indexes)
        }
    }

    /// The smallest candidate list the indexes give for `node`: one condition of an AND, every
    /// branch of an OR.
    private static func plan(_ node: ModelPredicate<M>.Node, _ indexes: [any MaintainedIndex<M>]) -> [M]? {
        switch node {
        case .always, .not, .related, .tooDeep:
            return nil
        case .typed(_, let probe), .inPlace(_, let probe, _, _):
            return probe?.lookup(indexes)
        case .keyed(let path, let condition):
            let key = path.joined(separator: ".")
            for index in indexes where index.key == key {
                if let candidates = index.candidates(for: condition) { return candidates }
            }
            return nil
        case .and(let nodes):
            var best: [M]?
            for node in nodes {
                if let candidates = plan(node, indexes), candidates.count < (best?.count ?? .max) { best = candidates }
            }
            return best
        case .or(let nodes):
            var union: [M] = []
            var seen = Set<ObjectIdentifier>()
            for node in nodes {
                guard let candidates = plan(node, indexes) else { return nil }
                for model in candidates where seen.insert(ObjectIdentifier(model)).inserted { union.append(model) }
            }
            return union
        }
    }

    func validate(_ key: SortKey<M>, template: ModelValue.Object?) throws {
        switch key {
        case .typed: return
        case .keyed(let path, _, _), .distance(let path, _):
            try ModelPredicate<M>.Node.keyed(path: path, condition: .exists).validate(template: template, modelName: M.modelName)
        }
    }

    private func window(_ models: [M]) -> [M] {
        let start = min(offsetCount, models.count)
        let end = limitCount.map { min(models.count, start + $0) } ?? models.count
        return Array(models[start..<end])
    }

    /// The matches in the query's order; without sort keys, in model-id order, so that pages
    /// are stable.
    func ordered(_ models: [M]) throws(QueryError) -> [M] {
        guard !sortKeys.isEmpty else {
            let ids = models.map(\.modelId)
            return ids.indices.sorted { ids[$0] < ids[$1] }.map { models[$0] }
        }
        return try guarded {
            // Each model's sort values are read once (string keys in place where the layout
            // allows, and folded once under the key's options), then sorted: see SortValue.swift.
            // The evaluator encodes a model once for all its keys not read in place.
            let order = SortOrder(sortKeys, evaluator: PropertyValues<M>())
            var values: [SortValue] = []
            values.reserveCapacity(models.count * order.width)
            for model in models { try order.append(model, to: &values) }
            let ids = models.map(\.modelId)
            return try order.sortedPositions(values, ids: ids, models: models).map { models[$0] }
        }
    }

    static func flipped(_ result: ComparisonResult) -> ComparisonResult {
        switch result {
        case .orderedAscending: .orderedDescending
        case .orderedDescending: .orderedAscending
        case .orderedSame: .orderedSame
        }
    }

    /// What a sort key compares for a model: a key path's value (see ``SortValue``), the value at
    /// a string key (a string folded under the key's options), or the distance of a point from
    /// the centre (infinity without a point).
    static func sortValueReader(_ key: SortKey<M>, _ evaluator: PropertyValues<M>) -> (M) throws -> SortValue {
        switch key {
        case .typed(_, _, let read, _):
            return read
        case .keyed(let path, _, let options):
            let read = valueReader(path, evaluator)
            guard !options.isEmpty else { return { SortValue(keyed: try read($0)) } }
            return { model in
                let value = try read(model)
                if case .string(let text) = value { return .string(text.folded(options)) }
                return SortValue(keyed: value)
            }
        case .distance(let path, let center):
            let read = valueReader(path, evaluator)
            return { model in .value(.double(try read(model).geoPoint.map { $0.distance(to: center) } ?? .infinity)) }
        }
    }

    /// Reads the value at `path`: in place when the layout allows, else by encoding the model.
    private static func valueReader(_ path: [String], _ evaluator: PropertyValues<M>) -> (M) throws -> ModelValue {
        if let read = PropertyLayout.of(M.self).reader(for: path) {
            return { model in
                let storage = model.storage
                return storage.box.withValuesPointer { read($0, storage.lookupContext) }
            }
        }
        return { model in try evaluator.value(at: path, of: model) }
    }

    /// The sort order of two values read by string key: nil first, then by value.
    static func order(_ a: ModelValue, _ b: ModelValue, options: StringOptions, key: [String]) throws
        -> ComparisonResult
    {
        switch (a, b) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        default:
            if let result = a.compare(to: b, options: options) { return result }
            if case .double(let x) = a, case .double(let y) = b, x.isNaN || y.isNaN {
                return x.isNaN == y.isNaN ? .orderedSame : (x.isNaN ? .orderedDescending : .orderedAscending)
            }
            throw QueryError(
                .incompatibleTypes, modelName: M.modelName, key: key.joined(separator: "."),
                expected: "values that can be ordered", found: "\(a.kindName) and \(b.kindName)")
        }
    }

    /// Runs `body`, turning any error into a ``QueryError``.
    func guarded<T>(_ body: () throws -> T) throws(QueryError) -> T {
        do {
            return try body()
        } catch let error as QueryError {
            throw error
        } catch {
            throw QueryError(.invalidCondition, modelName: M.modelName, expected: "a query that runs", found: "\(error)")
        }
    }
}
